package postgres_test

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/tokensvc/store"
	"github.com/mcpmesh/gateway/tokensvc/store/postgres"
	"github.com/mcpmesh/gateway/tokensvc/store/postgres/pgtest"
	"github.com/mcpmesh/gateway/tokensvc/store/storetest"
)

func open(tb testing.TB, dsn string) *postgres.Store {
	tb.Helper()
	s, err := postgres.New(tb.Context(), dsn)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

func TestPostgres_Conformance(t *testing.T) {
	t.Parallel()
	pgtest.Require(t)
	storetest.Run(t, func(t *testing.T) store.Store { return open(t, pgtest.DSN(t)) })
}

// Two replicas of the token service on one database: what one consumes is
// gone at the other, and a refresh token spent at one is a reuse at the
// other.
func TestPostgres_TwoReplicasShareSingleUse(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	a, b := open(t, dsn), open(t, dsn)
	ctx, now := t.Context(), time.Now()

	code := store.AuthCode{Hash: storetest.Hash(t), ClientID: "c", ExpiresAt: now.Add(time.Minute)}
	if err := a.CreateAuthCode(ctx, code); err != nil {
		t.Fatal(err)
	}
	if _, err := a.TakeAuthCode(ctx, code.Hash, now); err != nil {
		t.Fatalf("take at replica a: %v", err)
	}
	if _, err := b.TakeAuthCode(ctx, code.Hash, now); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("take at replica b after a: %v, want ErrNotFound", err)
	}

	sess := store.Session{ID: "sess", Subject: "u", ExpiresAt: now.Add(time.Hour)}
	if err := a.CreateSession(ctx, sess); err != nil {
		t.Fatal(err)
	}
	g := store.Grant{ID: "grant", ClientID: "c", SessionID: sess.ID, ExpiresAt: now.Add(time.Hour)}
	old := storetest.Hash(t)
	if err := a.CreateGrant(ctx, g, store.RefreshToken{Hash: old, ExpiresAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	next := store.RefreshToken{Hash: storetest.Hash(t), ExpiresAt: now.Add(time.Hour)}
	if _, err := a.RotateRefreshToken(ctx, old, next, now); err != nil {
		t.Fatalf("rotate at replica a: %v", err)
	}
	at := store.AccessToken{Hash: storetest.Hash(t), GrantID: g.ID, SessionID: sess.ID, ExpiresAt: now.Add(time.Hour)}
	if err := a.CreateAccessToken(ctx, at); err != nil {
		t.Fatal(err)
	}
	_, err := b.RotateRefreshToken(ctx, old, store.RefreshToken{Hash: storetest.Hash(t), ExpiresAt: now.Add(time.Hour)}, now)
	if !errors.Is(err, store.ErrRefreshReused) {
		t.Fatalf("replay at replica b: %v, want ErrRefreshReused", err)
	}
	if _, err := a.RotateRefreshToken(ctx, next.Hash, store.RefreshToken{Hash: storetest.Hash(t), ExpiresAt: now.Add(time.Hour)}, now); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("family's live token at replica a after reuse at b: %v, want ErrNotFound", err)
	}
	if _, err := a.GetAccessToken(ctx, at.Hash, now); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("access token at replica a after reuse at b: %v, want ErrNotFound", err)
	}
}

// Racers split between two replicas: exactly one rotation and one code
// redemption win, round after round.
func TestPostgres_TwoReplicasRace(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	replicas := []*postgres.Store{open(t, dsn), open(t, dsn)}
	ctx, now := t.Context(), time.Now()
	const racers = 8
	for round := range 10 {
		sess := store.Session{ID: "sess-" + string(rune('a'+round)), ExpiresAt: now.Add(time.Hour)}
		if err := replicas[0].CreateSession(ctx, sess); err != nil {
			t.Fatal(err)
		}
		g := store.Grant{ID: "grant-" + sess.ID, ClientID: "c", SessionID: sess.ID, ExpiresAt: now.Add(time.Hour)}
		old := storetest.Hash(t)
		if err := replicas[0].CreateGrant(ctx, g, store.RefreshToken{Hash: old, ExpiresAt: now.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		code := store.AuthCode{Hash: storetest.Hash(t), ClientID: "c", ExpiresAt: now.Add(time.Minute)}
		if err := replicas[1].CreateAuthCode(ctx, code); err != nil {
			t.Fatal(err)
		}

		rotErrs, takeErrs := make([]error, racers), make([]error, racers)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range racers {
			s := replicas[i%2]
			wg.Go(func() {
				<-start
				_, rotErrs[i] = s.RotateRefreshToken(ctx, old, store.RefreshToken{Hash: storetest.Hash(t), ExpiresAt: now.Add(time.Hour)}, now)
				_, takeErrs[i] = s.TakeAuthCode(ctx, code.Hash, now)
			})
		}
		close(start)
		wg.Wait()
		count := func(errs []error, allowed ...error) (wins int) {
			for _, err := range errs {
				if err == nil {
					wins++
					continue
				}
				ok := false
				for _, a := range allowed {
					ok = ok || errors.Is(err, a)
				}
				if !ok {
					t.Fatalf("round %d: unexpected error %v", round, err)
				}
			}
			return wins
		}
		if w := count(rotErrs, store.ErrRefreshReused, store.ErrNotFound); w != 1 {
			t.Fatalf("round %d: %d rotations won, want 1", round, w)
		}
		if w := count(takeErrs, store.ErrNotFound); w != 1 {
			t.Fatalf("round %d: %d code redemptions won, want 1", round, w)
		}
		if got, err := replicas[1].GetGrant(ctx, g.ID); err != nil || got.RevokedAt.IsZero() {
			t.Fatalf("round %d: grant after racing reuse: %+v, %v; want revoked", round, got, err)
		}
	}
}

// Replicas starting together migrate one schema once, without errors.
func TestPostgres_ConcurrentStartupMigratesOnce(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	errs := make([]error, 4)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() {
			s, err := postgres.New(t.Context(), dsn)
			if err == nil {
				s.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatalf("concurrent New: %v", err)
		}
	}
	// And a restart keeps what was stored.
	s := open(t, dsn)
	if err := s.CreateSession(t.Context(), store.Session{ID: "kept", ExpiresAt: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := open(t, dsn).GetSession(t.Context(), "kept"); err != nil {
		t.Fatalf("session lost across restart: %v", err)
	}
}

func TestPostgres_NewDoesNotLeakDSN(t *testing.T) {
	t.Parallel()
	_, err := postgres.New(t.Context(), "postgres://user:hunter2@[bad")
	if err == nil {
		t.Fatal("bad DSN accepted")
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("error leaks the password: %v", err)
	}
}

func BenchmarkPostgres_GetAccessToken(b *testing.B) {
	storetest.BenchGetAccessToken(b, open(b, pgtest.DSN(b)))
}

func BenchmarkPostgres_RotateRefreshToken(b *testing.B) {
	storetest.BenchRotateRefreshToken(b, open(b, pgtest.DSN(b)))
}
