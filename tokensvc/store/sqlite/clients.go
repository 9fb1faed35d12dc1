package sqlite

import (
	"context"
	"fmt"
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
	uris, err := list(c.RedirectURIs)
	if err != nil {
		return fmt.Errorf("create client: %w", err)
	}
	grants, err := list(c.GrantTypes)
	if err != nil {
		return fmt.Errorf("create client: %w", err)
	}
	responses, err := list(c.ResponseTypes)
	if err != nil {
		return fmt.Errorf("create client: %w", err)
	}
	_, err = s.w.ExecContext(ctx, `INSERT INTO clients (id, kind, secret_hash, name, redirect_uris,
		grant_types, response_types, token_endpoint_auth_method, scope, created_at, expires_at, last_used_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		c.ID, string(c.Kind), blob(c.SecretHash), c.Name, uris, grants, responses,
		c.TokenEndpointAuthMethod, c.Scope, ts(c.CreatedAt), ts(c.ExpiresAt), ts(c.LastUsedAt))
	if err != nil {
		return insertErr("create client", err)
	}
	return nil
}

// GetClient implements [store.Clients].
func (s *Store) GetClient(ctx context.Context, id string, at time.Time) (store.Client, error) {
	var c store.Client
	var kind string
	err := s.r.QueryRowContext(ctx, `SELECT id, kind, secret_hash, name, redirect_uris, grant_types,
		response_types, token_endpoint_auth_method, scope, created_at, expires_at, last_used_at
		FROM clients WHERE id = ? AND (expires_at IS NULL OR expires_at > ?)`, id, now(at)).Scan(
		&c.ID, &kind, blobDest{&c.SecretHash}, &c.Name, jsonList{&c.RedirectURIs}, jsonList{&c.GrantTypes},
		jsonList{&c.ResponseTypes}, &c.TokenEndpointAuthMethod, &c.Scope,
		nullTime{&c.CreatedAt}, nullTime{&c.ExpiresAt}, nullTime{&c.LastUsedAt})
	if err != nil {
		return store.Client{}, rowErr("get client", err)
	}
	c.Kind = store.ClientKind(kind)
	return c, nil
}

// TouchClient implements [store.Clients].
func (s *Store) TouchClient(ctx context.Context, id string, usedAt, expiresAt time.Time) error {
	res, err := s.w.ExecContext(ctx, `UPDATE clients SET last_used_at = ?1,
		expires_at = CASE WHEN expires_at IS NULL OR ?2 IS NULL THEN expires_at ELSE max(expires_at, ?2) END
		WHERE id = ?3`, ts(store.Time(usedAt)), ts(store.Time(expiresAt)), id)
	return affected("touch client", res, err)
}

// DeleteClient implements [store.Clients].
func (s *Store) DeleteClient(ctx context.Context, id string) error {
	res, err := s.w.ExecContext(ctx, `DELETE FROM clients WHERE id = ?`, id)
	return affected("delete client", res, err)
}
