package sqlite

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mcpmesh/gateway/tokensvc/store"
	"github.com/mcpmesh/gateway/tokensvc/store/internal/record"
)

// LeaseUpstreamToken implements [store.UpstreamLeases]. One UPDATE takes the
// lease: the single writer connection serialises it against every other
// writer of the file, in this process and in others.
func (s *Store) LeaseUpstreamToken(ctx context.Context, subject, routeID, holder string, until, at time.Time) (store.UpstreamToken, error) {
	if holder == "" {
		return store.UpstreamToken{}, errors.New("lease upstream token: empty holder")
	}
	var t store.UpstreamToken
	err := s.w.QueryRowContext(ctx, `UPDATE upstream_tokens SET lease_holder = ?3, lease_until = ?4
		WHERE subject = ?1 AND route_id = ?2 AND (expires_at IS NULL OR expires_at > ?5)
		AND (lease_holder IS NULL OR lease_holder = ?3 OR lease_until <= ?5)
		RETURNING subject, route_id, sealed, expires_at, updated_at`,
		subject, routeID, holder, now(until), now(at)).Scan(&t.Subject, &t.RouteID, blobDest{&t.Sealed},
		nullTime{&t.ExpiresAt}, nullTime{&t.UpdatedAt})
	if err == nil {
		return t, nil
	}
	if err := rowErr("lease upstream token", err); !errors.Is(err, store.ErrNotFound) {
		return store.UpstreamToken{}, err
	}
	if _, err := s.GetUpstreamToken(ctx, subject, routeID, at); err != nil {
		return store.UpstreamToken{}, fmt.Errorf("lease upstream token: %w", err)
	}
	return store.UpstreamToken{}, fmt.Errorf("lease upstream token: %w", store.ErrConflict)
}

// ReplaceLeasedUpstreamToken implements [store.UpstreamLeases].
func (s *Store) ReplaceLeasedUpstreamToken(ctx context.Context, t store.UpstreamToken, holder string) error {
	t, err := record.UpstreamToken(t)
	if err != nil {
		return err
	}
	res, err := s.w.ExecContext(ctx, `UPDATE upstream_tokens SET sealed = ?, expires_at = ?, updated_at = ?,
		lease_holder = NULL, lease_until = NULL WHERE subject = ? AND route_id = ? AND lease_holder = ?`,
		blob(t.Sealed), ts(t.ExpiresAt), ts(t.UpdatedAt), t.Subject, t.RouteID, holder)
	return s.leaseResult(ctx, "replace leased upstream token", t.Subject, t.RouteID, res, err)
}

// ReleaseUpstreamLease implements [store.UpstreamLeases].
func (s *Store) ReleaseUpstreamLease(ctx context.Context, subject, routeID, holder string, remove bool) error {
	q := `UPDATE upstream_tokens SET lease_holder = NULL, lease_until = NULL WHERE subject = ? AND route_id = ? AND lease_holder = ?`
	if remove {
		q = `DELETE FROM upstream_tokens WHERE subject = ? AND route_id = ? AND lease_holder = ?`
	}
	res, err := s.w.ExecContext(ctx, q, subject, routeID, holder)
	return s.leaseResult(ctx, "release upstream lease", subject, routeID, res, err)
}

// leaseResult maps the result of a statement conditional on the lease: no row
// changed is ErrNotFound when the token is gone, ErrConflict otherwise.
func (s *Store) leaseResult(ctx context.Context, op, subject, routeID string, res interface{ RowsAffected() (int64, error) }, err error) error {
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	} else if n > 0 {
		return nil
	}
	var one int
	err = s.w.QueryRowContext(ctx, `SELECT 1 FROM upstream_tokens WHERE subject = ? AND route_id = ?`, subject, routeID).Scan(&one)
	if err != nil {
		return rowErr(op, err)
	}
	return fmt.Errorf("%s: %w", op, store.ErrConflict)
}
