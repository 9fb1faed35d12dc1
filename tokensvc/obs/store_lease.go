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

func (s *Store) CreateUpstreamClient(ctx context.Context, c store.UpstreamClient) (err error) {
	ctx, end := s.begin(ctx, "CreateUpstreamClient")
	defer func() { end(err) }()
	return s.next.CreateUpstreamClient(ctx, c)
}

func (s *Store) GetUpstreamClient(ctx context.Context, issuer, redirectURI string, now time.Time) (_ store.UpstreamClient, err error) {
	ctx, end := s.begin(ctx, "GetUpstreamClient")
	defer func() { end(err) }()
	return s.next.GetUpstreamClient(ctx, issuer, redirectURI, now)
}

func (s *Store) DeleteUpstreamClient(ctx context.Context, issuer, redirectURI string, createdAt time.Time) (err error) {
	ctx, end := s.begin(ctx, "DeleteUpstreamClient")
	defer func() { end(err) }()
	return s.next.DeleteUpstreamClient(ctx, issuer, redirectURI, createdAt)
}
