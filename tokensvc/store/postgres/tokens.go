package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpmesh/gateway/tokensvc/store"
	"github.com/mcpmesh/gateway/tokensvc/store/internal/record"
)

// CreateAuthCode implements [store.AuthCodes].
func (s *Store) CreateAuthCode(ctx context.Context, c store.AuthCode) error {
	c, err := record.AuthCode(c)
	if err != nil {
		return err
	}
	_, err = s.pool.Exec(ctx, `INSERT INTO auth_codes (hash, client_id, session_id, subject,
		redirect_uri, code_challenge, scope, resource, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		c.Hash, c.ClientID, c.SessionID, c.Subject, c.RedirectURI, c.CodeChallenge, c.Scope, c.Resource,
		ts(c.CreatedAt), ts(c.ExpiresAt))
	if err != nil {
		return insertErr("create auth code", err)
	}
	return nil
}

// GetAuthCode implements [store.AuthCodes].
func (s *Store) GetAuthCode(ctx context.Context, hash []byte, at time.Time) (store.AuthCode, error) {
	var c store.AuthCode
	err := s.pool.QueryRow(ctx, `SELECT hash, client_id, session_id, subject, redirect_uri, code_challenge,
		scope, resource, created_at, expires_at FROM auth_codes WHERE hash = $1 AND expires_at > $2`, hash, now(at)).Scan(
		&c.Hash, &c.ClientID, &c.SessionID, &c.Subject, &c.RedirectURI, &c.CodeChallenge,
		&c.Scope, &c.Resource, tsDest{&c.CreatedAt}, tsDest{&c.ExpiresAt})
	if err != nil {
		return store.AuthCode{}, rowErr("get auth code", err)
	}
	return c, nil
}

// TakeAuthCode implements [store.AuthCodes]. One DELETE … RETURNING: of
// two concurrent deleters, the second waits for the first's row lock and
// then finds the row gone.
func (s *Store) TakeAuthCode(ctx context.Context, hash []byte, at time.Time) (store.AuthCode, error) {
	var c store.AuthCode
	err := s.pool.QueryRow(ctx, `DELETE FROM auth_codes WHERE hash = $1 AND expires_at > $2
		RETURNING hash, client_id, session_id, subject, redirect_uri, code_challenge, scope, resource,
		created_at, expires_at`, hash, now(at)).Scan(
		&c.Hash, &c.ClientID, &c.SessionID, &c.Subject, &c.RedirectURI, &c.CodeChallenge,
		&c.Scope, &c.Resource, tsDest{&c.CreatedAt}, tsDest{&c.ExpiresAt})
	if err != nil {
		return store.AuthCode{}, rowErr("take auth code", err)
	}
	return c, nil
}

const grantColumns = `g.id, g.client_id, g.session_id, g.subject, g.scope, g.resource,
	g.created_at, g.expires_at, g.revoked_at`

func grantDest(g *store.Grant) []any {
	return []any{&g.ID, &g.ClientID, &g.SessionID, &g.Subject, &g.Scope, &g.Resource,
		tsDest{&g.CreatedAt}, tsDest{&g.ExpiresAt}, tsDest{&g.RevokedAt}}
}

// CreateGrant implements [store.Grants]. The session row is share-locked
// while the grant is inserted, so a concurrent RevokeSession either runs
// first (and the grant is refused) or waits and then revokes the grant.
func (s *Store) CreateGrant(ctx context.Context, g store.Grant, first store.RefreshToken) error {
	g, err := record.Grant(g)
	if err != nil {
		return err
	}
	first, err = record.RefreshToken(first, g.ID)
	if err != nil {
		return err
	}
	return s.tx(ctx, func(tx pgx.Tx) error {
		if g.SessionID != "" {
			var one int
			err := tx.QueryRow(ctx, `SELECT 1 FROM sessions WHERE id = $1 AND revoked_at IS NULL FOR SHARE`,
				g.SessionID).Scan(&one)
			if err != nil {
				return rowErr("create grant: session", err)
			}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO grants (id, client_id, session_id, subject, scope,
			resource, created_at, expires_at, revoked_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
			g.ID, g.ClientID, g.SessionID, g.Subject, g.Scope, g.Resource,
			ts(g.CreatedAt), ts(g.ExpiresAt), ts(g.RevokedAt)); err != nil {
			return insertErr("create grant", err)
		}
		if err := insertRefresh(ctx, tx, first); err != nil {
			return insertErr("create grant: refresh token", err)
		}
		return nil
	})
}

func insertRefresh(ctx context.Context, tx pgx.Tx, t store.RefreshToken) error {
	_, err := tx.Exec(ctx, `INSERT INTO refresh_tokens (hash, grant_id, created_at, expires_at, used_at)
		VALUES ($1, $2, $3, $4, $5)`, t.Hash, t.GrantID, ts(t.CreatedAt), ts(t.ExpiresAt), ts(t.UsedAt))
	return err
}

// GetGrant implements [store.Grants].
func (s *Store) GetGrant(ctx context.Context, id string) (store.Grant, error) {
	var g store.Grant
	err := s.pool.QueryRow(ctx, `SELECT `+grantColumns+` FROM grants g WHERE g.id = $1`, id).Scan(grantDest(&g)...)
	if err != nil {
		return store.Grant{}, rowErr("get grant", err)
	}
	return g, nil
}

// GetRefreshToken implements [store.Grants].
func (s *Store) GetRefreshToken(ctx context.Context, hash []byte, at time.Time) (store.RefreshToken, store.Grant, error) {
	var t store.RefreshToken
	var g store.Grant
	dest := append([]any{&t.Hash, &t.GrantID, tsDest{&t.CreatedAt}, tsDest{&t.ExpiresAt}, tsDest{&t.UsedAt}},
		grantDest(&g)...)
	err := s.pool.QueryRow(ctx, `SELECT r.hash, r.grant_id, r.created_at, r.expires_at, r.used_at, `+
		grantColumns+` FROM refresh_tokens r JOIN grants g ON g.id = r.grant_id
		WHERE r.hash = $1 AND r.expires_at > $2 AND g.revoked_at IS NULL AND g.expires_at > $2`,
		hash, now(at)).Scan(dest...)
	if err != nil {
		return store.RefreshToken{}, store.Grant{}, rowErr("get refresh token", err)
	}
	return t, g, nil
}

// RotateRefreshToken implements [store.Grants].
//
// The spend is one statement: UPDATE … WHERE used_at IS NULL RETURNING,
// with the new token inserted from its result. A concurrent spender of the
// same row waits for the first one's row lock, re-checks the condition
// against the committed row, finds used_at set and updates nothing. Only
// then does a second statement tell reuse (revoke the grant and delete its
// access tokens, again in one statement) from absence.
func (s *Store) RotateRefreshToken(ctx context.Context, oldHash []byte, next store.RefreshToken, at time.Time) (store.Grant, error) {
	return s.RotateRefreshTokenWithin(ctx, oldHash, next, at, 0)
}

// RotateRefreshTokenWithin implements [store.Grants]. It spends as
// RotateRefreshToken does; a token found spent is then checked against the
// interval in one statement (the old token rotated at most reuse ago, next a
// live unrotated token of its grant, which the first rotation committed
// before the spend became visible) before reuse revokes the grant.
func (s *Store) RotateRefreshTokenWithin(ctx context.Context, oldHash []byte, next store.RefreshToken, at time.Time, reuse time.Duration) (store.Grant, error) {
	next, err := record.RefreshToken(next, "")
	if err != nil {
		return store.Grant{}, err
	}
	n := now(at)
	var g store.Grant
	err = s.pool.QueryRow(ctx, `WITH spent AS (
			UPDATE refresh_tokens r SET used_at = $2 FROM grants g
			WHERE r.hash = $1 AND r.used_at IS NULL AND r.expires_at > $2
			AND g.id = r.grant_id AND g.revoked_at IS NULL AND g.expires_at > $2
			RETURNING `+grantColumns+`
		), issued AS (
			INSERT INTO refresh_tokens (hash, grant_id, created_at, expires_at)
			SELECT $3, spent.id, $4, $5 FROM spent
		)
		SELECT * FROM spent`, oldHash, n, next.Hash, ts(next.CreatedAt), ts(next.ExpiresAt)).Scan(grantDest(&g)...)
	if err == nil {
		return g, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return store.Grant{}, insertErr("rotate refresh token", err)
	}
	// Not spendable: spent already (reuse), or not found.
	if reuse > 0 {
		err = s.pool.QueryRow(ctx, `SELECT `+grantColumns+` FROM refresh_tokens r
			JOIN grants g ON g.id = r.grant_id
			JOIN refresh_tokens succ ON succ.grant_id = r.grant_id
			WHERE r.hash = $1 AND r.used_at IS NOT NULL AND r.used_at >= $3 AND r.expires_at > $2
			AND g.revoked_at IS NULL AND g.expires_at > $2
			AND succ.hash = $4 AND succ.used_at IS NULL AND succ.expires_at > $2`,
			oldHash, n, n.Add(-reuse), next.Hash).Scan(grantDest(&g)...)
		if err == nil {
			return g, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return store.Grant{}, rowErr("rotate refresh token", err)
		}
	}
	var grantID string
	err = s.pool.QueryRow(ctx, `WITH revoked AS (
			UPDATE grants g SET revoked_at = $2 FROM refresh_tokens r
			WHERE r.hash = $1 AND r.used_at IS NOT NULL AND r.expires_at > $2
			AND g.id = r.grant_id AND g.revoked_at IS NULL AND g.expires_at > $2
			RETURNING g.id
		), dropped AS (
			DELETE FROM access_tokens a USING revoked WHERE a.grant_id = revoked.id
		)
		SELECT id FROM revoked`, oldHash, n).Scan(&grantID)
	if err != nil {
		return store.Grant{}, rowErr("rotate refresh token", err)
	}
	return store.Grant{}, fmt.Errorf("rotate refresh token: %w", store.ErrRefreshReused)
}

// revokeGrant revokes one grant (keeping an earlier RevokedAt) and deletes
// its access tokens. It reports ErrNotFound for an unknown grant.
func revokeGrant(ctx context.Context, tx pgx.Tx, id string, n time.Time) error {
	tag, err := tx.Exec(ctx, `UPDATE grants SET revoked_at = coalesce(revoked_at, $1) WHERE id = $2`, n, id)
	if err := affected("revoke grant", tag, err); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `DELETE FROM access_tokens WHERE grant_id = $1`, id); err != nil {
		return fmt.Errorf("revoke grant: delete access tokens: %w", err)
	}
	return nil
}

// RevokeGrant implements [store.Grants].
func (s *Store) RevokeGrant(ctx context.Context, id string, at time.Time) error {
	return s.tx(ctx, func(tx pgx.Tx) error { return revokeGrant(ctx, tx, id, now(at)) })
}

// ListGrantsBySession implements [store.Grants].
func (s *Store) ListGrantsBySession(ctx context.Context, sessionID string) ([]store.Grant, error) {
	if sessionID == "" {
		return nil, nil // grants outside a session are not a session's
	}
	rows, err := s.pool.Query(ctx, `SELECT `+grantColumns+` FROM grants g WHERE g.session_id = $1
		ORDER BY g.created_at, g.id`, sessionID)
	if err != nil {
		return nil, fmt.Errorf("list grants: %w", err)
	}
	defer rows.Close()
	var out []store.Grant
	for rows.Next() {
		var g store.Grant
		if err := rows.Scan(grantDest(&g)...); err != nil {
			return nil, fmt.Errorf("list grants: %w", err)
		}
		out = append(out, g)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list grants: %w", err)
	}
	return out, nil
}

// RevokeGrantsBySession implements [store.Grants].
func (s *Store) RevokeGrantsBySession(ctx context.Context, sessionID string, at time.Time) (int64, error) {
	if sessionID == "" {
		return 0, nil // grants outside a session are not a session's
	}
	var count int64
	err := s.tx(ctx, func(tx pgx.Tx) (err error) {
		count, err = revokeGrantsBySession(ctx, tx, sessionID, now(at))
		return err
	})
	return count, err
}

func revokeGrantsBySession(ctx context.Context, tx pgx.Tx, sessionID string, n time.Time) (int64, error) {
	rows, err := tx.Query(ctx, `UPDATE grants SET revoked_at = $1
		WHERE session_id = $2 AND revoked_at IS NULL RETURNING id`, n, sessionID)
	if err != nil {
		return 0, fmt.Errorf("revoke grants of session: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, fmt.Errorf("revoke grants of session: %w", err)
	}
	if len(ids) > 0 {
		if _, err := tx.Exec(ctx, `DELETE FROM access_tokens WHERE grant_id = ANY($1)`, ids); err != nil {
			return 0, fmt.Errorf("revoke grants of session: delete access tokens: %w", err)
		}
	}
	return int64(len(ids)), nil
}

// CreateAccessToken implements [store.AccessTokens].
func (s *Store) CreateAccessToken(ctx context.Context, t store.AccessToken) error {
	t, err := record.AccessToken(t)
	if err != nil {
		return err
	}
	_, err = s.pool.Exec(ctx, `INSERT INTO access_tokens (hash, grant_id, client_id, session_id,
		subject, scope, resource, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		t.Hash, t.GrantID, t.ClientID, t.SessionID, t.Subject, t.Scope, t.Resource,
		ts(t.CreatedAt), ts(t.ExpiresAt))
	if err != nil {
		return insertErr("create access token", err)
	}
	return nil
}

// GetAccessToken implements [store.AccessTokens].
func (s *Store) GetAccessToken(ctx context.Context, hash []byte, at time.Time) (store.AccessToken, error) {
	var t store.AccessToken
	err := s.pool.QueryRow(ctx, `SELECT a.hash, a.grant_id, a.client_id, a.session_id, a.subject,
		a.scope, a.resource, a.created_at, a.expires_at
		FROM access_tokens a
		LEFT JOIN grants g ON a.grant_id <> '' AND g.id = a.grant_id
		LEFT JOIN sessions s ON a.session_id <> '' AND s.id = a.session_id
		WHERE a.hash = $1 AND a.expires_at > $2
		AND (a.grant_id = '' OR (g.id IS NOT NULL AND g.revoked_at IS NULL AND g.expires_at > $2))
		AND (a.session_id = '' OR (s.id IS NOT NULL AND s.revoked_at IS NULL))`, hash, now(at)).Scan(
		&t.Hash, &t.GrantID, &t.ClientID, &t.SessionID, &t.Subject, &t.Scope, &t.Resource,
		tsDest{&t.CreatedAt}, tsDest{&t.ExpiresAt})
	if err != nil {
		return store.AccessToken{}, rowErr("get access token", err)
	}
	return t, nil
}

// DeleteAccessToken implements [store.AccessTokens].
func (s *Store) DeleteAccessToken(ctx context.Context, hash []byte) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM access_tokens WHERE hash = $1`, hash)
	return affected("delete access token", tag, err)
}
