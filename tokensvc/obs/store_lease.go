package obs

import (
	"context"
	"time"

	"github.com/mcpmesh/gateway/tokensvc/store"
)

func (s *Store) LeaseUpstreamToken(ctx context.Context, subject, routeID, holder string, until, now time.Time) (_ store.UpstreamToken, err error) {
	ctx, end := s.begin(ctx, "LeaseUpstreamToken")
	defer func() { end(err) }()
	return s.next.LeaseUpstreamToken(ctx, subject, routeID, holder, until, now)
}

func (s *Store) ReplaceLeasedUpstreamToken(ctx context.Context, t store.UpstreamToken, holder string) (err error) {
	ctx, end := s.begin(ctx, "ReplaceLeasedUpstreamToken")
	defer func() { end(err) }()
	return s.next.ReplaceLeasedUpstreamToken(ctx, t, holder)
}

func (s *Store) ReleaseUpstreamLease(ctx context.Context, subject, routeID, holder string, remove bool) (err error) {
	ctx, end := s.begin(ctx, "ReleaseUpstreamLease")
	defer func() { end(err) }()
	return s.next.ReleaseUpstreamLease(ctx, subject, routeID, holder, remove)
}
