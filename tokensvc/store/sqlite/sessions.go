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

const sessionColumns = `s.id, s.subject, s.email, s.name, s.groups_json, s.claims, s.idp_tokens,
	s.idp_token_expiry, s.created_at, s.expires_at, s.revoked_at, s.version`

func sessionDest(s *store.Session) []any {
	return []any{&s.ID, &s.Subject, &s.Email, &s.Name, jsonList{&s.Groups}, blobDest{&s.Claims},
		blobDest{&s.IDPTokens}, nullTime{&s.IDPTokenExpiry}, nullTime{&s.CreatedAt}, nullTime{&s.ExpiresAt},
		nullTime{&s.RevokedAt}, &s.Version}
}

// CreateSession implements [store.Sessions].
func (s *Store) CreateSession(ctx context.Context, sess store.Session) error {
	sess, err := record.Session(sess)
	if err != nil {
		return err
	}
	groups, err := list(sess.Groups)
	if err != nil {
		return fmt.Errorf("create session: %w", err)
	}
	_, err = s.w.ExecContext(ctx, `INSERT INTO sessions (id, subject, email, name, groups_json, claims,
		idp_tokens, idp_token_expiry, created_at, expires_at, revoked_at, version)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1)`,
		sess.ID, sess.Subject, sess.Email, sess.Name, groups, blob(sess.Claims), blob(sess.IDPTokens),
		ts(sess.IDPTokenExpiry), ts(sess.CreatedAt), ts(sess.ExpiresAt), ts(sess.RevokedAt))
	if err != nil {
		return insertErr("create session", err)
	}
	return nil
}

// GetSession implements [store.Sessions].
func (s *Store) GetSession(ctx context.Context, id string) (store.Session, error) {
	var sess store.Session
	err := s.r.QueryRowContext(ctx, `SELECT `+sessionColumns+` FROM sessions s
		WHERE s.id = ? AND s.revoked_at IS NULL`, id).Scan(sessionDest(&sess)...)
	if err != nil {
		return store.Session{}, rowErr("get session", err)
	}
	return sess, nil
}

// UpdateSession implements [store.Sessions].
func (s *Store) UpdateSession(ctx context.Context, sess store.Session) (int64, error) {
	sess, err := record.Session(sess)
	if err != nil {
		return 0, err
	}
	groups, err := list(sess.Groups)
	if err != nil {
		return 0, fmt.Errorf("update session: %w", err)
	}
	var version int64
	err = s.tx(ctx, func(tx *wtx) error {
		err := tx.QueryRowContext(ctx, `UPDATE sessions SET email = ?, name = ?, groups_json = ?, claims = ?,
			idp_tokens = ?, idp_token_expiry = ?, expires_at = ?, version = version + 1
			WHERE id = ? AND version = ? AND revoked_at IS NULL RETURNING version`,
			sess.Email, sess.Name, groups, blob(sess.Claims), blob(sess.IDPTokens), ts(sess.IDPTokenExpiry),
			ts(sess.ExpiresAt), sess.ID, sess.Version).Scan(&version)
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		var one int
		err = tx.QueryRowContext(ctx, `SELECT 1 FROM sessions WHERE id = ? AND revoked_at IS NULL`, sess.ID).Scan(&one)
		if err != nil {
			return err
		}
		return store.ErrConflict
	})
	if err != nil {
		return 0, rowErr("update session", err)
	}
	return version, nil
}

// RevokeSession implements [store.Sessions].
func (s *Store) RevokeSession(ctx context.Context, id string, at time.Time) error {
	n := now(at)
	return s.tx(ctx, func(tx *wtx) error {
		res, err := tx.ExecContext(ctx, `UPDATE sessions SET revoked_at = coalesce(revoked_at, ?) WHERE id = ?`, n, id)
		if err := affected("revoke session", res, err); err != nil {
			return err
		}
		if _, err := revokeGrantsBySession(ctx, tx, id, n); err != nil {
			return fmt.Errorf("revoke session: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM browser_cookies WHERE session_id = ?`, id); err != nil {
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
	_, err = s.w.ExecContext(ctx, `INSERT INTO browser_cookies (hash, session_id, host, created_at, expires_at)
		VALUES (?, ?, ?, ?, ?)`, c.Hash, c.SessionID, c.Host, ts(c.CreatedAt), ts(c.ExpiresAt))
	if err != nil {
		return insertErr("create browser cookie", err)
	}
	return nil
}

// GetBrowserCookie implements [store.BrowserCookies].
func (s *Store) GetBrowserCookie(ctx context.Context, hash []byte, host string, at time.Time) (store.BrowserCookie, store.Session, error) {
	var c store.BrowserCookie
	var sess store.Session
	dest := append([]any{blobDest{&c.Hash}, &c.SessionID, &c.Host, nullTime{&c.CreatedAt}, nullTime{&c.ExpiresAt}},
		sessionDest(&sess)...)
	err := s.r.QueryRowContext(ctx, `SELECT c.hash, c.session_id, c.host, c.created_at, c.expires_at, `+
		sessionColumns+` FROM browser_cookies c JOIN sessions s ON s.id = c.session_id
		WHERE c.hash = ?1 AND c.host = ?2 AND c.expires_at > ?3
		AND s.revoked_at IS NULL AND s.expires_at > ?3`, hash, host, now(at)).Scan(dest...)
	if err != nil {
		return store.BrowserCookie{}, store.Session{}, rowErr("get browser cookie", err)
	}
	return c, sess, nil
}

// DeleteBrowserCookie implements [store.BrowserCookies].
func (s *Store) DeleteBrowserCookie(ctx context.Context, hash []byte) error {
	res, err := s.w.ExecContext(ctx, `DELETE FROM browser_cookies WHERE hash = ?`, hash)
	return affected("delete browser cookie", res, err)
}

// PutUpstreamToken implements [store.UpstreamTokens].
func (s *Store) PutUpstreamToken(ctx context.Context, t store.UpstreamToken) error {
	t, err := record.UpstreamToken(t)
	if err != nil {
		return err
	}
	_, err = s.w.ExecContext(ctx, `INSERT INTO upstream_tokens (subject, route_id, sealed, expires_at, updated_at)
		VALUES (?, ?, ?, ?, ?) ON CONFLICT (subject, route_id) DO UPDATE SET
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
	err := s.r.QueryRowContext(ctx, `SELECT subject, route_id, sealed, expires_at, updated_at
		FROM upstream_tokens WHERE subject = ? AND route_id = ? AND (expires_at IS NULL OR expires_at > ?)`,
		subject, routeID, now(at)).Scan(&t.Subject, &t.RouteID, blobDest{&t.Sealed},
		nullTime{&t.ExpiresAt}, nullTime{&t.UpdatedAt})
	if err != nil {
		return store.UpstreamToken{}, rowErr("get upstream token", err)
	}
	return t, nil
}

// DeleteUpstreamToken implements [store.UpstreamTokens].
func (s *Store) DeleteUpstreamToken(ctx context.Context, subject, routeID string) error {
	res, err := s.w.ExecContext(ctx, `DELETE FROM upstream_tokens WHERE subject = ? AND route_id = ?`, subject, routeID)
	return affected("delete upstream token", res, err)
}

// PutOneTime implements [store.OneTimes].
func (s *Store) PutOneTime(ctx context.Context, v store.OneTime) error {
	v, err := record.OneTime(v)
	if err != nil {
		return err
	}
	_, err = s.w.ExecContext(ctx, `INSERT INTO one_times (hash, kind, payload, expires_at) VALUES (?, ?, ?, ?)`,
		v.Hash, v.Kind, blob(v.Payload), ts(v.ExpiresAt))
	if err != nil {
		return insertErr("put one-time value", err)
	}
	return nil
}

// GetOneTime implements [store.OneTimes].
func (s *Store) GetOneTime(ctx context.Context, hash []byte, kind string, at time.Time) (store.OneTime, error) {
	var v store.OneTime
	err := s.r.QueryRowContext(ctx, `SELECT hash, kind, payload, expires_at FROM one_times
		WHERE hash = ? AND kind = ? AND expires_at > ?`, hash, kind, now(at)).Scan(
		blobDest{&v.Hash}, &v.Kind, blobDest{&v.Payload}, nullTime{&v.ExpiresAt})
	if err != nil {
		return store.OneTime{}, rowErr("get one-time value", err)
	}
	return v, nil
}

// TakeOneTime implements [store.OneTimes].
func (s *Store) TakeOneTime(ctx context.Context, hash []byte, kind string, at time.Time) (store.OneTime, error) {
	var v store.OneTime
	err := s.w.QueryRowContext(ctx, `DELETE FROM one_times WHERE hash = ? AND kind = ? AND expires_at > ?
		RETURNING hash, kind, payload, expires_at`, hash, kind, now(at)).Scan(
		blobDest{&v.Hash}, &v.Kind, blobDest{&v.Payload}, nullTime{&v.ExpiresAt})
	if err != nil {
		return store.OneTime{}, rowErr("take one-time value", err)
	}
	return v, nil
}

// gcStatements delete expired rows, in an order where a row is removed
// after the rows that decide its fate: tokens of expired grants before the
// grants, sessions once no live grant holds them, cookies of gone sessions.
var gcStatements = []string{
	`DELETE FROM auth_codes WHERE expires_at IS NULL OR expires_at <= ?1`,
	`DELETE FROM one_times WHERE expires_at IS NULL OR expires_at <= ?1`,
	`DELETE FROM clients WHERE expires_at <= ?1`,
	`DELETE FROM upstream_tokens WHERE expires_at <= ?1`,
	`DELETE FROM upstream_clients WHERE expires_at <= ?1`,
	`DELETE FROM grants WHERE expires_at IS NULL OR expires_at <= ?1`,
	`DELETE FROM refresh_tokens WHERE expires_at IS NULL OR expires_at <= ?1
		OR NOT EXISTS (SELECT 1 FROM grants g WHERE g.id = refresh_tokens.grant_id)`,
	`DELETE FROM access_tokens WHERE expires_at IS NULL OR expires_at <= ?1
		OR (grant_id <> '' AND NOT EXISTS (SELECT 1 FROM grants g WHERE g.id = access_tokens.grant_id))`,
	`DELETE FROM sessions WHERE (expires_at IS NULL OR expires_at <= ?1)
		AND NOT EXISTS (SELECT 1 FROM grants g WHERE g.session_id = sessions.id
			AND g.revoked_at IS NULL AND g.expires_at > ?1)`,
	`DELETE FROM browser_cookies WHERE expires_at IS NULL OR expires_at <= ?1
		OR NOT EXISTS (SELECT 1 FROM sessions s WHERE s.id = browser_cookies.session_id)`,
}

// DeleteExpired implements [store.Store].
func (s *Store) DeleteExpired(ctx context.Context, at time.Time) (int64, error) {
	var total int64
	err := s.tx(ctx, func(tx *wtx) error {
		for _, q := range gcStatements {
			res, err := tx.ExecContext(ctx, q, now(at))
			if err != nil {
				return err
			}
			n, err := res.RowsAffected()
			if err != nil {
				return err
			}
			total += n
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("delete expired: %w", err)
	}
	return total, nil
}

// CountLiveSessions returns how many sessions are neither revoked nor expired at t (the
// live-sessions gauge).
func (s *Store) CountLiveSessions(ctx context.Context, t time.Time) (int64, error) {
	var n int64
	err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM sessions
		WHERE revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?)`, now(t)).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count sessions: %w", err)
	}
	return n, nil
}
