package sqlite

import (
	"context"
	"time"

	"github.com/mcpmesh/gateway/tokensvc/store"
	"github.com/mcpmesh/gateway/tokensvc/store/internal/record"
)

// CreateUpstreamClient implements [store.UpstreamClients].
func (s *Store) CreateUpstreamClient(ctx context.Context, c store.UpstreamClient) error {
	c, err := record.UpstreamClient(c)
	if err != nil {
		return err
	}
	_, err = s.w.ExecContext(ctx, `INSERT INTO upstream_clients (issuer, redirect_uri, sealed, expires_at, created_at)
		VALUES (?, ?, ?, ?, ?)`, c.Issuer, c.RedirectURI, blob(c.Sealed), ts(c.ExpiresAt), now(c.CreatedAt))
	if err != nil {
		return insertErr("create upstream client", err)
	}
	return nil
}

// GetUpstreamClient implements [store.UpstreamClients].
func (s *Store) GetUpstreamClient(ctx context.Context, issuer, redirectURI string, at time.Time) (store.UpstreamClient, error) {
	var c store.UpstreamClient
	err := s.r.QueryRowContext(ctx, `SELECT issuer, redirect_uri, sealed, expires_at, created_at FROM upstream_clients
		WHERE issuer = ? AND redirect_uri = ? AND (expires_at IS NULL OR expires_at > ?)`,
		issuer, redirectURI, now(at)).Scan(&c.Issuer, &c.RedirectURI, blobDest{&c.Sealed}, nullTime{&c.ExpiresAt}, nullTime{&c.CreatedAt})
	if err != nil {
		return store.UpstreamClient{}, rowErr("get upstream client", err)
	}
	return c, nil
}

// DeleteUpstreamClient implements [store.UpstreamClients].
func (s *Store) DeleteUpstreamClient(ctx context.Context, issuer, redirectURI string, createdAt time.Time) error {
	res, err := s.w.ExecContext(ctx, `DELETE FROM upstream_clients WHERE issuer = ? AND redirect_uri = ? AND created_at = ?`,
		issuer, redirectURI, now(createdAt))
	return affected("delete upstream client", res, err)
}
