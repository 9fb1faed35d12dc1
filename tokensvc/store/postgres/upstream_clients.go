package postgres

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
	_, err = s.pool.Exec(ctx, `INSERT INTO upstream_clients (issuer, redirect_uri, sealed, expires_at, created_at)
		VALUES ($1, $2, $3, $4, $5)`, c.Issuer, c.RedirectURI, blob(c.Sealed), ts(c.ExpiresAt), now(c.CreatedAt))
	if err != nil {
		return insertErr("create upstream client", err)
	}
	return nil
}

// GetUpstreamClient implements [store.UpstreamClients].
func (s *Store) GetUpstreamClient(ctx context.Context, issuer, redirectURI string, at time.Time) (store.UpstreamClient, error) {
	var c store.UpstreamClient
	err := s.pool.QueryRow(ctx, `SELECT issuer, redirect_uri, sealed, expires_at, created_at FROM upstream_clients
		WHERE issuer = $1 AND redirect_uri = $2 AND (expires_at IS NULL OR expires_at > $3)`,
		issuer, redirectURI, now(at)).Scan(&c.Issuer, &c.RedirectURI, &c.Sealed, tsDest{&c.ExpiresAt}, tsDest{&c.CreatedAt})
	if err != nil {
		return store.UpstreamClient{}, rowErr("get upstream client", err)
	}
	return c, nil
}

// DeleteUpstreamClient implements [store.UpstreamClients].
func (s *Store) DeleteUpstreamClient(ctx context.Context, issuer, redirectURI string, createdAt time.Time) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM upstream_clients WHERE issuer = $1 AND redirect_uri = $2 AND created_at = $3`,
		issuer, redirectURI, now(createdAt))
	return affected("delete upstream client", tag, err)
}
