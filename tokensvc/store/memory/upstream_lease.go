package memory

import (
	"context"
	"fmt"
	"time"

	"github.com/mcpmesh/gateway/tokensvc/store"
	"github.com/mcpmesh/gateway/tokensvc/store/internal/record"
)

// upstreamLease is the refresh lease of one Internal Token.
type upstreamLease struct {
	holder string
	until  time.Time
}

func conflict(what string) error { return fmt.Errorf("%s: %w", what, store.ErrConflict) }

// LeaseUpstreamToken implements [store.UpstreamLeases].
func (s *Store) LeaseUpstreamToken(ctx context.Context, subject, routeID, holder string, until, now time.Time) (store.UpstreamToken, error) {
	if holder == "" {
		return store.UpstreamToken{}, fmt.Errorf("lease upstream token: empty holder")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := upstreamKey{subject, routeID}
	t, ok := s.upstream[k]
	if !ok || !record.Live(t.ExpiresAt, now, true) {
		return store.UpstreamToken{}, notFound("lease upstream token")
	}
	if l, ok := s.leases[k]; ok && l.holder != holder && store.Time(now).Before(l.until) {
		return store.UpstreamToken{}, conflict("lease upstream token")
	}
	s.leases[k] = upstreamLease{holder: holder, until: store.Time(until)}
	return record.CopyUpstreamToken(t), nil
}

// ReplaceLeasedUpstreamToken implements [store.UpstreamLeases].
func (s *Store) ReplaceLeasedUpstreamToken(ctx context.Context, t store.UpstreamToken, holder string) error {
	t, err := record.UpstreamToken(t)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := upstreamKey{t.Subject, t.RouteID}
	if err := s.holds(k, holder, "replace leased upstream token"); err != nil {
		return err
	}
	s.upstream[k] = t
	delete(s.leases, k)
	return nil
}

// ReleaseUpstreamLease implements [store.UpstreamLeases].
func (s *Store) ReleaseUpstreamLease(ctx context.Context, subject, routeID, holder string, remove bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := upstreamKey{subject, routeID}
	if err := s.holds(k, holder, "release upstream lease"); err != nil {
		return err
	}
	delete(s.leases, k)
	if remove {
		delete(s.upstream, k)
	}
	return nil
}

// holds checks that holder holds the lease of k's existing token.
func (s *Store) holds(k upstreamKey, holder, op string) error {
	if _, ok := s.upstream[k]; !ok {
		return notFound(op)
	}
	if l, ok := s.leases[k]; !ok || l.holder != holder {
		return conflict(op)
	}
	return nil
}
