package memory

import (
	"context"
	"time"

	"github.com/mcpmesh/gateway/tokensvc/store"
	"github.com/mcpmesh/gateway/tokensvc/store/internal/record"
)

// upstreamClientKey names a registration: issuer and redirect URI.
type upstreamClientKey struct{ issuer, redirectURI string }

// CreateUpstreamClient implements [store.UpstreamClients].
func (s *Store) CreateUpstreamClient(ctx context.Context, c store.UpstreamClient) error {
	c, err := record.UpstreamClient(c)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := upstreamClientKey{c.Issuer, c.RedirectURI}
	if _, ok := s.upClients[k]; ok {
		return alreadyExists("create upstream client")
	}
	s.upClients[k] = c
	return nil
}

// GetUpstreamClient implements [store.UpstreamClients].
func (s *Store) GetUpstreamClient(ctx context.Context, issuer, redirectURI string, now time.Time) (store.UpstreamClient, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.upClients[upstreamClientKey{issuer, redirectURI}]
	if !ok || !record.Live(c.ExpiresAt, now, true) {
		return store.UpstreamClient{}, notFound("get upstream client")
	}
	return record.CopyUpstreamClient(c), nil
}

// DeleteUpstreamClient implements [store.UpstreamClients].
func (s *Store) DeleteUpstreamClient(ctx context.Context, issuer, redirectURI string, createdAt time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := upstreamClientKey{issuer, redirectURI}
	if c, ok := s.upClients[k]; !ok || !c.CreatedAt.Equal(store.Time(createdAt)) {
		return notFound("delete upstream client")
	}
	delete(s.upClients, k)
	return nil
}
