package upstream

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/tokensvc/secret"
	"github.com/mcpmesh/gateway/tokensvc/store"
	"github.com/mcpmesh/gateway/tokensvc/store/postgres"
	"github.com/mcpmesh/gateway/tokensvc/store/postgres/pgtest"
	"github.com/mcpmesh/gateway/tokensvc/store/sqlite"
)

// Concurrency of the refresh: users, and concurrent requests of each user per replica.
const (
	concurrentUsers    = 50
	requestsPerReplica = 2
)

// noLease is a store whose refresh lease never refuses anyone: the store without the
// cross-replica lease, to show that the concurrency test catches its absence.
type noLease struct{ store.Store }

func (n noLease) LeaseUpstreamToken(ctx context.Context, subject, routeID, holder string, until, now time.Time) (store.UpstreamToken, error) {
	return n.GetUpstreamToken(ctx, subject, routeID, now)
}

func (n noLease) ReplaceLeasedUpstreamToken(ctx context.Context, t store.UpstreamToken, holder string) error {
	return n.PutUpstreamToken(ctx, t)
}

func (n noLease) ReleaseUpstreamLease(ctx context.Context, subject, routeID, holder string, remove bool) error {
	if remove {
		return n.DeleteUpstreamToken(ctx, subject, routeID)
	}
	return nil
}

// refreshRace gives concurrentUsers users an expired, refreshable TI and has every replica
// ask for each user's TI requestsPerReplica times at once. It returns the problems seen: a
// user given another's TI, a failed request, or an upstream refresh token presented more
// than once.
func refreshRace(t *testing.T, replicas []store.Store) []string {
	t.Helper()
	e := newEnv(t, "header", replicas[0])
	// The provider takes a while, so that concurrent refreshes overlap.
	e.p.hostile = func(w http.ResponseWriter, r *http.Request) bool {
		time.Sleep(20 * time.Millisecond)
		return false
	}
	sealer, _ := secret.NewSealer(e.cfg.DeriveKey("seal"))
	var svcs []*Service
	for _, st := range replicas {
		svcs = append(svcs, New(e.cfg, st, sealer, sessions{st}, WithLogger(slog.New(slog.DiscardHandler))))
	}
	ctx := context.Background()
	for i := range concurrentUsers {
		user, rt := fmt.Sprintf("user-%d", i), fmt.Sprintf("rt-seed-%d-%s", i, secret.NewToken()[:6])
		e.p.mu.Lock()
		e.p.refresh[rt] = "account-" + user + "-"
		e.p.mu.Unlock()
		if err := svcs[0].SaveToken(ctx, user, routeID, Token{AccessToken: "expired-" + user, RefreshToken: rt, Expiry: time.Now().Add(-time.Second)}); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var problems []string
	report := func(format string, args ...any) {
		mu.Lock()
		problems = append(problems, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range concurrentUsers {
		user := fmt.Sprintf("user-%d", i)
		for r, svc := range svcs {
			for range requestsPerReplica {
				wg.Go(func() {
					<-start
					ti, _, err := svc.Token(ctx, user, routeID)
					switch {
					case err != nil:
						report("%s at replica %d: %v", user, r, err)
					case !strings.Contains(ti, "-account-"+user+"-"):
						report("%s at replica %d got another user's TI %.20s…", user, r, ti)
					}
				})
			}
		}
	}
	close(start)
	wg.Wait()
	e.p.mu.Lock()
	defer e.p.mu.Unlock()
	for rt, n := range e.p.spent {
		if n != 1 {
			problems = append(problems, fmt.Sprintf("refresh token %.16s… presented %d times", rt, n))
		}
	}
	if len(e.p.spent) != concurrentUsers {
		problems = append(problems, fmt.Sprintf("%d refresh tokens spent, want %d", len(e.p.spent), concurrentUsers))
	}
	return problems
}

func sqliteReplicas(t *testing.T, wrap func(store.Store) store.Store) []store.Store {
	path := filepath.Join(t.TempDir(), "gateway.db")
	var out []store.Store
	for range 2 {
		st, err := sqlite.New(t.Context(), path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		out = append(out, wrap(st))
	}
	return out
}

func postgresReplicas(t *testing.T, wrap func(store.Store) store.Store) []store.Store {
	pgtest.Require(t)
	dsn := pgtest.DSN(t)
	var out []store.Store
	for range 2 {
		st, err := postgres.New(t.Context(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		out = append(out, wrap(st))
	}
	return out
}

func same(s store.Store) store.Store { return s }

// TestConcurrentRefresh_EachRefreshTokenSpentOnce: 50 users with expired TIs, each asked for
// by several requests on two replicas (two stores on one SQLite file, or two on one
// PostgreSQL database): every user gets their own refreshed TI, and the provider sees each
// refresh token exactly once.
func TestConcurrentRefresh_EachRefreshTokenSpentOnce(t *testing.T) {
	t.Parallel()
	for name, replicas := range map[string]func(*testing.T, func(store.Store) store.Store) []store.Store{
		"sqlite": sqliteReplicas, "postgres": postgresReplicas,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if problems := refreshRace(t, replicas(t, same)); len(problems) > 0 {
				t.Errorf("%d problems:\n%s", len(problems), strings.Join(problems, "\n"))
			}
		})
	}
}

// TestConcurrentRefresh_WithoutTheLeaseFails runs the same race on stores whose lease never
// refuses: the race must then show refresh tokens spent twice, or the test above proves
// nothing. Whether two replicas overlap on one user is up to the scheduler: on a machine busy
// enough to run the goroutines one after another a round can show no double spend, so the
// race gets up to three rounds to show one.
func TestConcurrentRefresh_WithoutTheLeaseFails(t *testing.T) {
	t.Parallel()
	for name, replicas := range map[string]func(*testing.T, func(store.Store) store.Store) []store.Store{
		"sqlite": sqliteReplicas, "postgres": postgresReplicas,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			const rounds = 3
			for round := 1; ; round++ {
				problems := refreshRace(t, replicas(t, func(s store.Store) store.Store { return noLease{s} }))
				spentTwice := 0
				for _, p := range problems {
					if strings.Contains(p, "presented 2 times") {
						spentTwice++
					}
				}
				t.Logf("without the lease, round %d: %d refresh tokens spent twice, %d problems", round, spentTwice, len(problems))
				if spentTwice > 0 {
					return
				}
				if round == rounds {
					t.Fatalf("without the lease no refresh token was spent twice in %d rounds; problems of the last: %v", rounds, problems)
				}
			}
		})
	}
}
