package oauth

// Red-team tests: races between two token-service replicas sharing one database (two
// SQLite handles on one file, as two processes would have, and two PostgreSQL pools when
// GATEWAY_TEST_POSTGRES_DSN is set). Single use and rotation must hold across replicas, not
// only inside one process.

import (
	"context"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/mcpmesh/gateway/shared/config"

	"github.com/mcpmesh/gateway/tokensvc/hosts"
	"github.com/mcpmesh/gateway/tokensvc/reqid"
	"github.com/mcpmesh/gateway/tokensvc/secret"
	"github.com/mcpmesh/gateway/tokensvc/store"
	"github.com/mcpmesh/gateway/tokensvc/store/postgres"
	"github.com/mcpmesh/gateway/tokensvc/store/postgres/pgtest"
	"github.com/mcpmesh/gateway/tokensvc/store/sqlite"
)

// replicas are two authorization servers, each on its own SQLite handle of one file.
type replicas struct {
	a, b  *env
	store store.Store // replica a's handle
	clock *testClock
}

func newReplicas(t *testing.T, backend string, mods ...func(*config.Config)) *replicas {
	t.Helper()
	var open func() (store.Store, error)
	switch backend {
	case "sqlite":
		path := filepath.Join(t.TempDir(), "gateway.db")
		open = func() (store.Store, error) { return sqlite.New(context.Background(), path) }
	case "postgres":
		dsn := pgtest.DSN(t)
		open = func() (store.Store, error) { return postgres.New(context.Background(), dsn) }
	default:
		t.Fatalf("unknown backend %q", backend)
	}
	clock := &testClock{t: time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC)}
	cfg := testConfig()
	for _, m := range mods {
		m(cfg)
	}
	mk := func() (*env, store.Store) {
		st, err := open()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		fs := &fakeSessions{st: st, clock: clock}
		srv := New(cfg, st, fs, WithClock(clock.Now))
		r := chi.NewRouter()
		r.Use(reqid.Middleware, hosts.NewTable(cfg).Middleware)
		routeForTest(r, srv)
		return &env{t: t, cfg: cfg, clock: clock, sessions: fs, srv: srv, handler: r}, st
	}
	a, st := mk()
	b, _ := mk()
	return &replicas{a: a, b: b, store: st, clock: clock}
}

func (r *replicas) session(t *testing.T, subject string) store.Session {
	t.Helper()
	now := r.clock.Now()
	s := store.Session{ID: "sess-" + secret.NewToken()[:12], Subject: subject, Email: subject + "@example.com", CreatedAt: now, ExpiresAt: now.Add(14 * time.Hour)}
	if err := r.store.CreateSession(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	return s
}

// forBackends runs test once per shared-database backend.
func forBackends(t *testing.T, test func(t *testing.T, r *replicas), mods ...func(*config.Config)) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			test(t, newReplicas(t, backend, mods...))
		})
	}
}

// race runs f(i) for i in [0,n) at once and returns how many returned 200.
func race(n int, f func(i int) int) (ok int, others []int) {
	var wg sync.WaitGroup
	statuses := make([]int, n)
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			statuses[i] = f(i)
		}()
	}
	close(start)
	wg.Wait()
	for _, s := range statuses {
		if s == http.StatusOK {
			ok++
		} else {
			others = append(others, s)
		}
	}
	return ok, others
}

// Attack: redeem one authorization code at both replicas at once, hoping each replica's
// check-then-delete lets one redemption through on each.
func TestRedTeam_Replicas_CodeRedeemedOnceAcrossReplicas(t *testing.T) {
	t.Parallel()
	forBackends(t, func(t *testing.T, r *replicas) {
		c := r.a.register(nil)
		sess := r.session(t, "alice")
		for round := range 3 {
			code, verifier := r.a.authorizeCode(c, sess, nil)
			ok, others := race(8, func(i int) int {
				e := r.a
				if i%2 == 1 {
					e = r.b
				}
				return e.token(c, codeForm(c, code, verifier)).Code
			})
			if ok != 1 {
				t.Fatalf("round %d: %d redemptions succeeded across replicas (others %v), want exactly 1", round, ok, others)
			}
			for _, s := range others {
				if s != http.StatusBadRequest {
					t.Errorf("round %d: loser got %d, want 400 invalid_grant", round, s)
				}
			}
		}
	})
}

// Attack: a stolen refresh token raced against the legitimate client, each at another
// replica, with the reuse interval off. At most one rotation may succeed, and the reuse
// ends the family everywhere. (With the interval on, see
// TestToken_ConcurrentRefreshAcrossReplicasKeepsOneSuccessor.)
func TestRedTeam_Replicas_RefreshRaceAcrossReplicasEndsTheFamily(t *testing.T) {
	t.Parallel()
	forBackends(t, func(t *testing.T, r *replicas) {
		c := r.a.register(nil)
		sess := r.session(t, "alice")
		code, verifier := r.a.authorizeCode(c, sess, nil)
		first := tokens(t, r.a.token(c, codeForm(c, code, verifier)))

		var mu sync.Mutex
		var won []tokenResponse
		ok, others := race(6, func(i int) int {
			e := r.a
			if i%2 == 1 {
				e = r.b
			}
			rec := e.token(c, refreshForm(first.RefreshToken))
			if rec.Code == http.StatusOK {
				mu.Lock()
				won = append(won, tokens(t, rec))
				mu.Unlock()
			}
			return rec.Code
		})
		if ok > 1 {
			t.Fatalf("%d concurrent refreshes with one token succeeded, want at most 1", ok)
		}
		for _, s := range others {
			if s != http.StatusBadRequest {
				t.Errorf("loser got %d, want 400 invalid_grant", s)
			}
		}
		// The reuse revoked the family: whatever the winner got is dead at both replicas.
		for _, w := range won {
			for _, e := range []*env{r.a, r.b} {
				if rec := e.token(c, refreshForm(w.RefreshToken)); rec.Code != http.StatusBadRequest {
					t.Errorf("winner's rotated refresh token after the reuse: %d, want 400", rec.Code)
				}
				if _, err := e.srv.ValidateAccessToken(context.Background(), w.AccessToken, resMain); err == nil {
					t.Error("winner's access token still valid after the reuse")
				}
			}
		}
		if _, err := r.b.srv.ValidateAccessToken(context.Background(), first.AccessToken, resMain); err == nil {
			t.Error("the family's first access token still valid after the reuse")
		}
	}, reuseOff)
}

// Attack: submit one consent approval at both replicas at once, to get two codes from one
// approval (two grants the user approved once).
func TestRedTeam_Replicas_ConsentAnsweredOnceAcrossReplicas(t *testing.T) {
	t.Parallel()
	forBackends(t, func(t *testing.T, r *replicas) {
		c := r.a.register(nil)
		sess := r.session(t, "alice")
		_, challenge := pkce()
		handle := consentHandle(t, r.a.get(issuer+"/.gateway/mcp/authorize?"+authParams(c, challenge).Encode(), sess.ID))
		codes := 0
		var mu sync.Mutex
		race(8, func(i int) int {
			e := r.a
			if i%2 == 1 {
				e = r.b
			}
			rec := e.answerConsent(issuer, sess.ID, handle, actionApprove)
			if rec.Code == http.StatusSeeOther && location(t, rec).Query().Get("code") != "" {
				mu.Lock()
				codes++
				mu.Unlock()
			}
			return rec.Code
		})
		if codes != 1 {
			t.Fatalf("one approval yielded %d codes across replicas, want 1", codes)
		}
	})
}

// Attack: replay at replica b a code already redeemed at replica a; the replay must revoke
// what the first redemption yielded, whichever replica sees it.
func TestRedTeam_Replicas_CodeReplayAtOtherReplicaRevokes(t *testing.T) {
	t.Parallel()
	forBackends(t, func(t *testing.T, r *replicas) {
		c := r.a.register(nil)
		sess := r.session(t, "alice")
		code, verifier := r.a.authorizeCode(c, sess, nil)
		got := tokens(t, r.a.token(c, codeForm(c, code, verifier)))
		if rec := r.b.token(c, codeForm(c, code, verifier)); rec.Code != http.StatusBadRequest {
			t.Fatalf("replay at replica b: %d, want 400", rec.Code)
		}
		if _, err := r.a.srv.ValidateAccessToken(context.Background(), got.AccessToken, resMain); err == nil {
			t.Error("access token of a replayed code still valid")
		}
		if rec := r.a.token(c, refreshForm(got.RefreshToken)); rec.Code != http.StatusBadRequest {
			t.Errorf("refresh token of a replayed code: %d, want 400", rec.Code)
		}
	})
}

// Attack: race the rightful redemption of a code with attempts that carry the wrong PKCE
// verifier, at both replicas. The attempts must all fail without spending the code, and
// the rightful client's redemption must succeed exactly once.
func TestRedTeam_Replicas_WrongVerifierRacingTheClientDoesNotBurnTheCode(t *testing.T) {
	t.Parallel()
	forBackends(t, func(t *testing.T, r *replicas) {
		c := r.a.register(nil)
		sess := r.session(t, "alice")
		for round := range 3 {
			code, verifier := r.a.authorizeCode(c, sess, nil)
			wrong, _ := pkce()
			ok, others := race(8, func(i int) int {
				e := r.a
				if i%2 == 1 {
					e = r.b
				}
				v := wrong
				if i == 7 {
					v = verifier
				}
				return e.token(c, codeForm(c, code, v)).Code
			})
			if ok != 1 {
				t.Fatalf("round %d: %d redemptions succeeded (others %v), want exactly the rightful one", round, ok, others)
			}
		}
	})
}
