package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/mcpmesh/gateway/tokensvc/store"
	"github.com/mcpmesh/gateway/tokensvc/store/internal/record"
)

// LeaseUpstreamToken implements [store.UpstreamLeases]. One UPDATE takes the
// lease: PostgreSQL's row lock makes concurrent takers on every replica wait
// for each other and re-check the condition, so exactly one wins.
func (s *Store) LeaseUpstreamToken(ctx context.Context, subject, routeID, holder string, until, at time.Time) (store.UpstreamToken, error) {
	if holder == "" {
		return store.UpstreamToken{}, errors.New("lease upstream token: empty holder")
	}
	var t store.UpstreamToken
	err := s.pool.QueryRow(ctx, `UPDATE upstream_tokens SET lease_holder = $3, lease_until = $4
		WHERE subject = $1 AND route_id = $2 AND (expires_at IS NULL OR expires_at > $5)
		AND (lease_holder IS NULL OR lease_holder = $3 OR lease_until <= $5)
		RETURNING subject, route_id, sealed, expires_at, updated_at`,
		subject, routeID, holder, now(until), now(at)).Scan(&t.Subject, &t.RouteID, &t.Sealed, tsDest{&t.ExpiresAt}, tsDest{&t.UpdatedAt})
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
	tag, err := s.pool.Exec(ctx, `UPDATE upstream_tokens SET sealed = $1, expires_at = $2, updated_at = $3,
		lease_holder = NULL, lease_until = NULL WHERE subject = $4 AND route_id = $5 AND lease_holder = $6`,
		blob(t.Sealed), ts(t.ExpiresAt), ts(t.UpdatedAt), t.Subject, t.RouteID, holder)
	return s.leaseResult(ctx, "replace leased upstream token", t.Subject, t.RouteID, tag, err)
}

// ReleaseUpstreamLease implements [store.UpstreamLeases].
func (s *Store) ReleaseUpstreamLease(ctx context.Context, subject, routeID, holder string, remove bool) error {
	q := `UPDATE upstream_tokens SET lease_holder = NULL, lease_until = NULL WHERE subject = $1 AND route_id = $2 AND lease_holder = $3`
	if remove {
		q = `DELETE FROM upstream_tokens WHERE subject = $1 AND route_id = $2 AND lease_holder = $3`
	}
	tag, err := s.pool.Exec(ctx, q, subject, routeID, holder)
	return s.leaseResult(ctx, "release upstream lease", subject, routeID, tag, err)
}

// leaseResult maps the result of a statement conditional on the lease: no row
// changed is ErrNotFound when the token is gone, ErrConflict otherwise.
func (s *Store) leaseResult(ctx context.Context, op, subject, routeID string, tag pgconn.CommandTag, err error) error {
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if tag.RowsAffected() > 0 {
		return nil
	}
	var one int
	if err := s.pool.QueryRow(ctx, `SELECT 1 FROM upstream_tokens WHERE subject = $1 AND route_id = $2`, subject, routeID).Scan(&one); err != nil {
		return rowErr(op, err)
	}
	return fmt.Errorf("%s: %w", op, store.ErrConflict)
}
