package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"fmt"
	"time"

	"github.com/mcpmesh/gateway/tokensvc/store"
	"github.com/mcpmesh/gateway/tokensvc/store/internal/record"
)

// CreateAuthCode implements [store.AuthCodes].
func (s *Store) CreateAuthCode(ctx context.Context, c store.AuthCode) error {
	c, err := record.AuthCode(c)
	if err != nil {
		return err
	}
	_, err = s.w.ExecContext(ctx, `INSERT INTO auth_codes (hash, client_id, session_id, subject,
		redirect_uri, code_challenge, scope, resource, created_at, expires_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
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
	err := s.r.QueryRowContext(ctx, `SELECT hash, client_id, session_id, subject, redirect_uri, code_challenge,
		scope, resource, created_at, expires_at FROM auth_codes WHERE hash = ? AND expires_at > ?`, hash, now(at)).Scan(
		blobDest{&c.Hash}, &c.ClientID, &c.SessionID, &c.Subject, &c.RedirectURI, &c.CodeChallenge,
		&c.Scope, &c.Resource, nullTime{&c.CreatedAt}, nullTime{&c.ExpiresAt})
	if err != nil {
		return store.AuthCode{}, rowErr("get auth code", err)
	}
	return c, nil
}

// TakeAuthCode implements [store.AuthCodes]. One DELETE … RETURNING on the
// single writer connection: two callers cannot both see the row.
func (s *Store) TakeAuthCode(ctx context.Context, hash []byte, at time.Time) (store.AuthCode, error) {
	var c store.AuthCode
	err := s.w.QueryRowContext(ctx, `DELETE FROM auth_codes WHERE hash = ? AND expires_at > ?
		RETURNING hash, client_id, session_id, subject, redirect_uri, code_challenge, scope, resource,
		created_at, expires_at`, hash, now(at)).Scan(
		blobDest{&c.Hash}, &c.ClientID, &c.SessionID, &c.Subject, &c.RedirectURI, &c.CodeChallenge,
		&c.Scope, &c.Resource, nullTime{&c.CreatedAt}, nullTime{&c.ExpiresAt})
	if err != nil {
		return store.AuthCode{}, rowErr("take auth code", err)
	}
	return c, nil
}

const grantColumns = `g.id, g.client_id, g.session_id, g.subject, g.scope, g.resource,
	g.created_at, g.expires_at, g.revoked_at`

func grantDest(g *store.Grant) []any {
	return []any{&g.ID, &g.ClientID, &g.SessionID, &g.Subject, &g.Scope, &g.Resource,
		nullTime{&g.CreatedAt}, nullTime{&g.ExpiresAt}, nullTime{&g.RevokedAt}}
}

// CreateGrant implements [store.Grants].
func (s *Store) CreateGrant(ctx context.Context, g store.Grant, first store.RefreshToken) error {
	g, err := record.Grant(g)
	if err != nil {
		return err
	}
	first, err = record.RefreshToken(first, g.ID)
	if err != nil {
		return err
	}
	return s.tx(ctx, func(tx *wtx) error {
		if g.SessionID != "" {
			var one int
			err := tx.QueryRowContext(ctx, `SELECT 1 FROM sessions WHERE id = ? AND revoked_at IS NULL`,
				g.SessionID).Scan(&one)
			if err != nil {
				return rowErr("create grant: session", err)
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO grants (id, client_id, session_id, subject, scope,
			resource, created_at, expires_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
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

func insertRefresh(ctx context.Context, tx *wtx, t store.RefreshToken) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO refresh_tokens (hash, grant_id, created_at, expires_at, used_at)
		VALUES (?, ?, ?, ?, ?)`, t.Hash, t.GrantID, ts(t.CreatedAt), ts(t.ExpiresAt), ts(t.UsedAt))
	return err
}

// GetGrant implements [store.Grants].
func (s *Store) GetGrant(ctx context.Context, id string) (store.Grant, error) {
	var g store.Grant
	err := s.r.QueryRowContext(ctx, `SELECT `+grantColumns+` FROM grants g WHERE g.id = ?`, id).Scan(grantDest(&g)...)
	if err != nil {
		return store.Grant{}, rowErr("get grant", err)
	}
	return g, nil
}

// GetRefreshToken implements [store.Grants].
func (s *Store) GetRefreshToken(ctx context.Context, hash []byte, at time.Time) (store.RefreshToken, store.Grant, error) {
	var t store.RefreshToken
	var g store.Grant
	n := now(at)
	dest := append([]any{blobDest{&t.Hash}, &t.GrantID, nullTime{&t.CreatedAt}, nullTime{&t.ExpiresAt},
		nullTime{&t.UsedAt}}, grantDest(&g)...)
	err := s.r.QueryRowContext(ctx, `SELECT r.hash, r.grant_id, r.created_at, r.expires_at, r.used_at, `+
		grantColumns+` FROM refresh_tokens r JOIN grants g ON g.id = r.grant_id
		WHERE r.hash = ? AND r.expires_at > ? AND g.revoked_at IS NULL AND g.expires_at > ?`,
		hash, n, n).Scan(dest...)
	if err != nil {
		return store.RefreshToken{}, store.Grant{}, rowErr("get refresh token", err)
	}
	return t, g, nil
}

// RotateRefreshToken implements [store.Grants]. The whole check-and-spend
// runs in one IMMEDIATE transaction: SQLite admits one writer at a time.
func (s *Store) RotateRefreshToken(ctx context.Context, oldHash []byte, next store.RefreshToken, at time.Time) (store.Grant, error) {
	return s.RotateRefreshTokenWithin(ctx, oldHash, next, at, 0)
}

// RotateRefreshTokenWithin implements [store.Grants], in the same one
// IMMEDIATE transaction as RotateRefreshToken.
func (s *Store) RotateRefreshTokenWithin(ctx context.Context, oldHash []byte, next store.RefreshToken, at time.Time, reuse time.Duration) (store.Grant, error) {
	next, err := record.RefreshToken(next, "")
	if err != nil {
		return store.Grant{}, err
	}
	n := now(at)
	var g store.Grant
	reused := false
	err = s.tx(ctx, func(tx *wtx) error {
		var usedAt sql.NullInt64
		dest := append([]any{&usedAt}, grantDest(&g)...)
		err := tx.QueryRowContext(ctx, `SELECT r.used_at, `+grantColumns+`
			FROM refresh_tokens r JOIN grants g ON g.id = r.grant_id
			WHERE r.hash = ? AND r.expires_at > ? AND g.revoked_at IS NULL AND g.expires_at > ?`,
			oldHash, n, n).Scan(dest...)
		if err != nil {
			return rowErr("rotate refresh token", err)
		}
		if usedAt.Valid {
			if reuse > 0 && n-usedAt.Int64 <= reuse.Microseconds() {
				var one int
				err := tx.QueryRowContext(ctx, `SELECT 1 FROM refresh_tokens
					WHERE hash = ? AND grant_id = ? AND used_at IS NULL AND expires_at > ?`,
					next.Hash, g.ID, n).Scan(&one)
				if err == nil {
					return nil // the successor of the first rotation, within the interval
				}
				if !errors.Is(err, sql.ErrNoRows) {
					return fmt.Errorf("rotate refresh token: successor: %w", err)
				}
			}
			reused = true
			return revokeGrant(ctx, tx, g.ID, n)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE refresh_tokens SET used_at = ? WHERE hash = ?`, n, oldHash); err != nil {
			return fmt.Errorf("rotate refresh token: %w", err)
		}
		next.GrantID = g.ID
		if err := insertRefresh(ctx, tx, next); err != nil {
			return insertErr("rotate refresh token: new token", err)
		}
		return nil
	})
	if err != nil {
		return store.Grant{}, err
	}
	if reused {
		return store.Grant{}, fmt.Errorf("rotate refresh token: %w", store.ErrRefreshReused)
	}
	return g, nil
}

// revokeGrant revokes one grant (keeping an earlier RevokedAt) and deletes
// its access tokens. It reports ErrNotFound for an unknown grant.
func revokeGrant(ctx context.Context, tx *wtx, id string, n int64) error {
	res, err := tx.ExecContext(ctx, `UPDATE grants SET revoked_at = coalesce(revoked_at, ?) WHERE id = ?`, n, id)
	if err := affected("revoke grant", res, err); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM access_tokens WHERE grant_id = ?`, id); err != nil {
		return fmt.Errorf("revoke grant: delete access tokens: %w", err)
	}
	return nil
}

// RevokeGrant implements [store.Grants].
func (s *Store) RevokeGrant(ctx context.Context, id string, at time.Time) error {
	return s.tx(ctx, func(tx *wtx) error { return revokeGrant(ctx, tx, id, now(at)) })
}

// ListGrantsBySession implements [store.Grants].
func (s *Store) ListGrantsBySession(ctx context.Context, sessionID string) ([]store.Grant, error) {
	if sessionID == "" {
		return nil, nil // grants outside a session are not a session's
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+grantColumns+` FROM grants g WHERE g.session_id = ?
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
	err := s.tx(ctx, func(tx *wtx) (err error) {
		count, err = revokeGrantsBySession(ctx, tx, sessionID, now(at))
		return err
	})
	return count, err
}

func revokeGrantsBySession(ctx context.Context, tx *wtx, sessionID string, n int64) (int64, error) {
	if _, err := tx.ExecContext(ctx, `DELETE FROM access_tokens WHERE grant_id IN
		(SELECT id FROM grants WHERE session_id = ? AND revoked_at IS NULL)`, sessionID); err != nil {
		return 0, fmt.Errorf("revoke grants of session: delete access tokens: %w", err)
	}
	res, err := tx.ExecContext(ctx, `UPDATE grants SET revoked_at = ? WHERE session_id = ? AND revoked_at IS NULL`,
		n, sessionID)
	if err != nil {
		return 0, fmt.Errorf("revoke grants of session: %w", err)
	}
	count, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("revoke grants of session: %w", err)
	}
	return count, nil
}

// CreateAccessToken implements [store.AccessTokens].
func (s *Store) CreateAccessToken(ctx context.Context, t store.AccessToken) error {
	t, err := record.AccessToken(t)
	if err != nil {
		return err
	}
	_, err = s.w.ExecContext(ctx, `INSERT INTO access_tokens (hash, grant_id, client_id, session_id,
		subject, scope, resource, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
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
	n := now(at)
	err := s.r.QueryRowContext(ctx, `SELECT a.hash, a.grant_id, a.client_id, a.session_id, a.subject,
		a.scope, a.resource, a.created_at, a.expires_at
		FROM access_tokens a
		LEFT JOIN grants g ON a.grant_id <> '' AND g.id = a.grant_id
		LEFT JOIN sessions s ON a.session_id <> '' AND s.id = a.session_id
		WHERE a.hash = ?1 AND a.expires_at > ?2
		AND (a.grant_id = '' OR (g.id IS NOT NULL AND g.revoked_at IS NULL AND g.expires_at > ?2))
		AND (a.session_id = '' OR (s.id IS NOT NULL AND s.revoked_at IS NULL))`, hash, n).Scan(
		blobDest{&t.Hash}, &t.GrantID, &t.ClientID, &t.SessionID, &t.Subject, &t.Scope, &t.Resource,
		nullTime{&t.CreatedAt}, nullTime{&t.ExpiresAt})
	if err != nil {
		return store.AccessToken{}, rowErr("get access token", err)
	}
	return t, nil
}

// DeleteAccessToken implements [store.AccessTokens].
func (s *Store) DeleteAccessToken(ctx context.Context, hash []byte) error {
	res, err := s.w.ExecContext(ctx, `DELETE FROM access_tokens WHERE hash = ?`, hash)
	return affected("delete access token", res, err)
}
