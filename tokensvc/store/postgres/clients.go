package postgres

import (
	"context"
	"time"

	"github.com/mcpmesh/gateway/tokensvc/store"
	"github.com/mcpmesh/gateway/tokensvc/store/internal/record"
)

// CreateClient implements [store.Clients].
func (s *Store) CreateClient(ctx context.Context, c store.Client) error {
	c, err := record.Client(c)
	if err != nil {
		return err
	}
	_, err = s.pool.Exec(ctx, `INSERT INTO clients (id, kind, secret_hash, name, redirect_uris,
		grant_types, response_types, token_endpoint_auth_method, scope, created_at, expires_at, last_used_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
		c.ID, string(c.Kind), blob(c.SecretHash), c.Name, list(c.RedirectURIs), list(c.GrantTypes),
		list(c.ResponseTypes), c.TokenEndpointAuthMethod, c.Scope,
		ts(c.CreatedAt), ts(c.ExpiresAt), ts(c.LastUsedAt))
	if err != nil {
		return insertErr("create client", err)
	}
	return nil
}

// GetClient implements [store.Clients].
func (s *Store) GetClient(ctx context.Context, id string, at time.Time) (store.Client, error) {
	var c store.Client
	var kind string
	err := s.pool.QueryRow(ctx, `SELECT id, kind, secret_hash, name, redirect_uris, grant_types,
		response_types, token_endpoint_auth_method, scope, created_at, expires_at, last_used_at
		FROM clients WHERE id = $1 AND (expires_at IS NULL OR expires_at > $2)`, id, now(at)).Scan(
		&c.ID, &kind, &c.SecretHash, &c.Name, &c.RedirectURIs, &c.GrantTypes, &c.ResponseTypes,
		&c.TokenEndpointAuthMethod, &c.Scope, tsDest{&c.CreatedAt}, tsDest{&c.ExpiresAt}, tsDest{&c.LastUsedAt})
	if err != nil {
		return store.Client{}, rowErr("get client", err)
	}
	c.Kind = store.ClientKind(kind)
	return record.CopyClient(c), nil
}

// TouchClient implements [store.Clients].
func (s *Store) TouchClient(ctx context.Context, id string, usedAt, expiresAt time.Time) error {
	tag, err := s.pool.Exec(ctx, `UPDATE clients SET last_used_at = $1,
		expires_at = CASE WHEN expires_at IS NULL THEN NULL ELSE GREATEST(expires_at, $2::timestamptz) END
		WHERE id = $3`, ts(store.Time(usedAt)), ts(store.Time(expiresAt)), id)
	return affected("touch client", tag, err)
}

// DeleteClient implements [store.Clients].
func (s *Store) DeleteClient(ctx context.Context, id string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM clients WHERE id = $1`, id)
	return affected("delete client", tag, err)
}
