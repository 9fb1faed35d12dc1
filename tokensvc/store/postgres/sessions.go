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

const sessionColumns = `s.id, s.subject, s.email, s.name, s.groups, s.claims, s.idp_tokens,
	s.idp_token_expiry, s.created_at, s.expires_at, s.revoked_at, s.version`

func sessionDest(s *store.Session) []any {
	return []any{&s.ID, &s.Subject, &s.Email, &s.Name, &s.Groups, &s.Claims, &s.IDPTokens,
		tsDest{&s.IDPTokenExpiry}, tsDest{&s.CreatedAt}, tsDest{&s.ExpiresAt}, tsDest{&s.RevokedAt}, &s.Version}
}

// CreateSession implements [store.Sessions].
func (s *Store) CreateSession(ctx context.Context, sess store.Session) error {
	sess, err := record.Session(sess)
	if err != nil {
		return err
	}
	_, err = s.pool.Exec(ctx, `INSERT INTO sessions (id, subject, email, name, groups, claims,
		idp_tokens, idp_token_expiry, created_at, expires_at, revoked_at, version)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 1)`,
		sess.ID, sess.Subject, sess.Email, sess.Name, list(sess.Groups), blob(sess.Claims), blob(sess.IDPTokens),
		ts(sess.IDPTokenExpiry), ts(sess.CreatedAt), ts(sess.ExpiresAt), ts(sess.RevokedAt))
	if err != nil {
		return insertErr("create session", err)
	}
	return nil
}

// GetSession implements [store.Sessions].
func (s *Store) GetSession(ctx context.Context, id string) (store.Session, error) {
	var sess store.Session
	err := s.pool.QueryRow(ctx, `SELECT `+sessionColumns+` FROM sessions s
		WHERE s.id = $1 AND s.revoked_at IS NULL`, id).Scan(sessionDest(&sess)...)
	if err != nil {
		return store.Session{}, rowErr("get session", err)
	}
	return record.CopySession(sess), nil
}

// UpdateSession implements [store.Sessions]: a compare-and-swap on version.
func (s *Store) UpdateSession(ctx context.Context, sess store.Session) (int64, error) {
	sess, err := record.Session(sess)
	if err != nil {
		return 0, err
	}
	var version int64
	err = s.pool.QueryRow(ctx, `UPDATE sessions SET email = $1, name = $2, groups = $3, claims = $4,
		idp_tokens = $5, idp_token_expiry = $6, expires_at = $7, version = version + 1
		WHERE id = $8 AND version = $9 AND revoked_at IS NULL RETURNING version`,
		sess.Email, sess.Name, list(sess.Groups), blob(sess.Claims), blob(sess.IDPTokens),
		ts(sess.IDPTokenExpiry), ts(sess.ExpiresAt), sess.ID, sess.Version).Scan(&version)
	if err == nil {
		return version, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("update session: %w", err)
	}
	var one int
	err = s.pool.QueryRow(ctx, `SELECT 1 FROM sessions WHERE id = $1 AND revoked_at IS NULL`, sess.ID).Scan(&one)
	if err != nil {
		return 0, rowErr("update session", err)
	}
	return 0, fmt.Errorf("update session: %w", store.ErrConflict)
}

// RevokeSession implements [store.Sessions].
func (s *Store) RevokeSession(ctx context.Context, id string, at time.Time) error {
	n := now(at)
	return s.tx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE sessions SET revoked_at = coalesce(revoked_at, $1) WHERE id = $2`, n, id)
		if err := affected("revoke session", tag, err); err != nil {
			return err
		}
		if _, err := revokeGrantsBySession(ctx, tx, id, n); err != nil {
			return fmt.Errorf("revoke session: %w", err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM browser_cookies WHERE session_id = $1`, id); err != nil {
			return fmt.Errorf("revoke session: delete cookies: %w", err)
		}
		return nil
	})
}

// CreateBrowserCookie implements [store.BrowserCookies].
func (s *Store) CreateBrowserCookie(ctx context.Context, c store.BrowserCookie) error {
	c, err := record.BrowserCookie(c)
	if err != nil {
		return err
	}
	_, err = s.pool.Exec(ctx, `INSERT INTO browser_cookies (hash, session_id, host, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5)`, c.Hash, c.SessionID, c.Host, ts(c.CreatedAt), ts(c.ExpiresAt))
	if err != nil {
		return insertErr("create browser cookie", err)
	}
	return nil
}

// GetBrowserCookie implements [store.BrowserCookies].
func (s *Store) GetBrowserCookie(ctx context.Context, hash []byte, host string, at time.Time) (store.BrowserCookie, store.Session, error) {
	var c store.BrowserCookie
	var sess store.Session
	dest := append([]any{&c.Hash, &c.SessionID, &c.Host, tsDest{&c.CreatedAt}, tsDest{&c.ExpiresAt}},
		sessionDest(&sess)...)
	err := s.pool.QueryRow(ctx, `SELECT c.hash, c.session_id, c.host, c.created_at, c.expires_at, `+
		sessionColumns+` FROM browser_cookies c JOIN sessions s ON s.id = c.session_id
		WHERE c.hash = $1 AND c.host = $2 AND c.expires_at > $3
		AND s.revoked_at IS NULL AND s.expires_at > $3`, hash, host, now(at)).Scan(dest...)
	if err != nil {
		return store.BrowserCookie{}, store.Session{}, rowErr("get browser cookie", err)
	}
	return c, record.CopySession(sess), nil
}

// DeleteBrowserCookie implements [store.BrowserCookies].
func (s *Store) DeleteBrowserCookie(ctx context.Context, hash []byte) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM browser_cookies WHERE hash = $1`, hash)
	return affected("delete browser cookie", tag, err)
}

// PutUpstreamToken implements [store.UpstreamTokens].
func (s *Store) PutUpstreamToken(ctx context.Context, t store.UpstreamToken) error {
	t, err := record.UpstreamToken(t)
	if err != nil {
		return err
	}
	_, err = s.pool.Exec(ctx, `INSERT INTO upstream_tokens (subject, route_id, sealed, expires_at, updated_at)
		VALUES ($1, $2, $3, $4, $5) ON CONFLICT (subject, route_id) DO UPDATE SET
		sealed = excluded.sealed, expires_at = excluded.expires_at, updated_at = excluded.updated_at,
		lease_holder = NULL, lease_until = NULL`,
		t.Subject, t.RouteID, blob(t.Sealed), ts(t.ExpiresAt), ts(t.UpdatedAt))
	if err != nil {
		return fmt.Errorf("put upstream token: %w", err)
	}
	return nil
}

// GetUpstreamToken implements [store.UpstreamTokens].
func (s *Store) GetUpstreamToken(ctx context.Context, subject, routeID string, at time.Time) (store.UpstreamToken, error) {
	var t store.UpstreamToken
	err := s.pool.QueryRow(ctx, `SELECT subject, route_id, sealed, expires_at, updated_at
		FROM upstream_tokens WHERE subject = $1 AND route_id = $2 AND (expires_at IS NULL OR expires_at > $3)`,
		subject, routeID, now(at)).Scan(&t.Subject, &t.RouteID, &t.Sealed, tsDest{&t.ExpiresAt}, tsDest{&t.UpdatedAt})
	if err != nil {
		return store.UpstreamToken{}, rowErr("get upstream token", err)
	}
	return t, nil
}

// DeleteUpstreamToken implements [store.UpstreamTokens].
func (s *Store) DeleteUpstreamToken(ctx context.Context, subject, routeID string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM upstream_tokens WHERE subject = $1 AND route_id = $2`, subject, routeID)
	return affected("delete upstream token", tag, err)
}

// PutOneTime implements [store.OneTimes].
func (s *Store) PutOneTime(ctx context.Context, v store.OneTime) error {
	v, err := record.OneTime(v)
	if err != nil {
		return err
	}
	_, err = s.pool.Exec(ctx, `INSERT INTO one_times (hash, kind, payload, expires_at) VALUES ($1, $2, $3, $4)`,
		v.Hash, v.Kind, blob(v.Payload), ts(v.ExpiresAt))
	if err != nil {
		return insertErr("put one-time value", err)
	}
	return nil
}

// GetOneTime implements [store.OneTimes].
func (s *Store) GetOneTime(ctx context.Context, hash []byte, kind string, at time.Time) (store.OneTime, error) {
	var v store.OneTime
	err := s.pool.QueryRow(ctx, `SELECT hash, kind, payload, expires_at FROM one_times
		WHERE hash = $1 AND kind = $2 AND expires_at > $3`, hash, kind, now(at)).Scan(
		&v.Hash, &v.Kind, &v.Payload, tsDest{&v.ExpiresAt})
	if err != nil {
		return store.OneTime{}, rowErr("get one-time value", err)
	}
	return record.CopyOneTime(v), nil
}

// TakeOneTime implements [store.OneTimes].
func (s *Store) TakeOneTime(ctx context.Context, hash []byte, kind string, at time.Time) (store.OneTime, error) {
	var v store.OneTime
	err := s.pool.QueryRow(ctx, `DELETE FROM one_times WHERE hash = $1 AND kind = $2 AND expires_at > $3
		RETURNING hash, kind, payload, expires_at`, hash, kind, now(at)).Scan(
		&v.Hash, &v.Kind, &v.Payload, tsDest{&v.ExpiresAt})
	if err != nil {
		return store.OneTime{}, rowErr("take one-time value", err)
	}
	return record.CopyOneTime(v), nil
}

// gcStatements delete expired rows, in an order where a row is removed
// after the rows that decide its fate: tokens of expired grants after the
// grants, sessions once no live grant holds them, cookies of gone sessions.
// Each runs on its own, so collection never holds many locks for long.
var gcStatements = []string{
	`DELETE FROM auth_codes WHERE expires_at IS NULL OR expires_at <= $1`,
	`DELETE FROM one_times WHERE expires_at IS NULL OR expires_at <= $1`,
	`DELETE FROM clients WHERE expires_at <= $1`,
	`DELETE FROM upstream_tokens WHERE expires_at <= $1`,
	`DELETE FROM upstream_clients WHERE expires_at <= $1`,
	`DELETE FROM grants WHERE expires_at IS NULL OR expires_at <= $1`,
	`DELETE FROM refresh_tokens r WHERE r.expires_at IS NULL OR r.expires_at <= $1
		OR NOT EXISTS (SELECT 1 FROM grants g WHERE g.id = r.grant_id)`,
	`DELETE FROM access_tokens a WHERE a.expires_at IS NULL OR a.expires_at <= $1
		OR (a.grant_id <> '' AND NOT EXISTS (SELECT 1 FROM grants g WHERE g.id = a.grant_id))`,
	`DELETE FROM sessions s WHERE (s.expires_at IS NULL OR s.expires_at <= $1)
		AND NOT EXISTS (SELECT 1 FROM grants g WHERE g.session_id = s.id
			AND g.revoked_at IS NULL AND g.expires_at > $1)`,
	`DELETE FROM browser_cookies c WHERE c.expires_at IS NULL OR c.expires_at <= $1
		OR NOT EXISTS (SELECT 1 FROM sessions s WHERE s.id = c.session_id)`,
}

// DeleteExpired implements [store.Store].
func (s *Store) DeleteExpired(ctx context.Context, at time.Time) (int64, error) {
	var total int64
	for _, q := range gcStatements {
		tag, err := s.pool.Exec(ctx, q, now(at))
		if err != nil {
			return total, fmt.Errorf("delete expired: %w", err)
		}
		total += tag.RowsAffected()
	}
	return total, nil
}

// CountLiveSessions returns how many sessions are neither revoked nor expired at t (the
// live-sessions gauge).
func (s *Store) CountLiveSessions(ctx context.Context, t time.Time) (int64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM sessions
		WHERE revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $1)`, store.Time(t)).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count sessions: %w", err)
	}
	return n, nil
}
