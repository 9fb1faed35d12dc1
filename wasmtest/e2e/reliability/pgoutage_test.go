package reliability

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/tokensvc/store/postgres/pgtest"
	"github.com/mcpmesh/gateway/wasmtest/e2e/harness"
)

// user is one signed-in user of a fault test: a client, its current refresh token, an access
// token the gateway has cached a decision for, and one it has never seen.
type user struct {
	c                *client
	refresh          string
	cached, uncached string
}

// signInUsers signs n users in through the real flow and primes them.
func signInUsers(t *testing.T, s *rstack, n int) []*user {
	t.Helper()
	var us []*user
	for range n {
		c := s.signIn(t)
		u := &user{c: c, refresh: c.Token.RefreshToken}
		u.prime(t, s)
		us = append(us, u)
	}
	return us
}

// prime gives u a freshly cached access token (one refresh, one tool call) and one the
// gateway has never seen (a second refresh).
func (u *user) prime(t *testing.T, s *rstack) {
	t.Helper()
	for i := range 2 {
		st, code, tr := u.c.refreshStatus(u.refresh)
		if st != http.StatusOK {
			t.Fatalf("refresh: %d %s", st, code)
		}
		u.refresh = tr.RefreshToken
		if i == 0 {
			u.cached = tr.AccessToken
			// Every filter VM (worker) has its own cache, and streams go to them in turn:
			// one call per worker, and one more, caches the decision in each.
			for range s.Gateway.Host().Workers() + 1 {
				if st := mcp(s.MCPURL, u.cached); st != http.StatusOK {
					t.Fatalf("tool call: %d", st)
				}
			}
		} else {
			u.uncached = tr.AccessToken
		}
	}
}

// eachUser runs f for every user at once and waits.
func eachUser(us []*user, f func(u *user)) {
	var wg sync.WaitGroup
	for _, u := range us {
		wg.Go(func() { f(u) })
	}
	wg.Wait()
}

// TestPostgresOutage cuts the token service's connections to PostgreSQL (a TCP proxy between
// them: the shared server is never restarted) under steady traffic, twice: connections
// refused (the database down) and connections accepted but never answered (a hung database).
// During the outage every refresh is 503 temporarily_unavailable with Retry-After (never
// invalid_grant), every request without a cached decision is 503 (never 401, never allowed),
// and requests with a cached decision go on. After the restore, with no restart, the refresh
// and access tokens from before work, and the store holds the same sessions, grants and live
// refresh tokens.
func TestPostgresOutage(t *testing.T) {
	direct := pgtest.DSN(t)
	pg := harness.StartFaultProxy(t, pgTarget(t, direct))
	s := startStack(t, stackOptions{Storage: fmt.Sprintf("{type: postgres, dsn: %q}", withHost(direct, pg.Addr()))})
	users := signInUsers(t, s, scale(8, 32))
	before := countRecords(t, direct)
	t.Logf("RELIABILITY %s: before the outage: %s", t.Name(), before)

	for _, mode := range []struct {
		name   string
		fault  func()
		rounds int
	}{
		{"refused", pg.Cut, scale(25, 50)},
		{"hung", pg.Hang, scale(1, 3)}, // each refresh waits for the token service's deadline
	} {
		t.Run(mode.name, func(t *testing.T) {
			for _, u := range users {
				u.prime(t, s)
			}
			primed, ttl := time.Now(), s.Config.TokenService.CheckCacheTTL.D()
			refresh := newTally("refresh during the outage (" + mode.name + ")")
			uncached := newTally("uncached MCP requests during the outage (" + mode.name + ")")
			cached := newTally("cached MCP requests during the outage (" + mode.name + ")")
			expired := newTally("cached past check_cache_ttl during the outage (" + mode.name + ")")
			mode.fault()
			for range mode.rounds {
				eachUser(users, func(u *user) {
					start := time.Now()
					st, code, _ := u.c.refreshStatus(u.refresh)
					refresh.add(st, time.Since(start), st == http.StatusOK || code == "invalid_grant")
					if st != http.StatusServiceUnavailable || code != "temporarily_unavailable" {
						t.Errorf("refresh during the outage: %d %q, want 503 temporarily_unavailable", st, code)
					}
				})
				eachUser(users, func(u *user) {
					start := time.Now()
					st := mcp(s.MCPURL, u.uncached)
					uncached.add(st, time.Since(start), st == http.StatusOK)
					if st != http.StatusServiceUnavailable {
						t.Errorf("uncached MCP request during the outage: %d, want 503", st)
					}
					// A cached decision carries requests until check_cache_ttl, then 503.
					start = time.Now()
					st = mcp(s.MCPURL, u.cached)
					switch age := time.Since(primed); {
					case age < ttl-time.Second:
						cached.add(st, time.Since(start), false)
						if st != http.StatusOK {
							t.Errorf("cached MCP request during the outage: %d, want 200", st)
						}
					case age > ttl+time.Second:
						expired.add(st, time.Since(start), st == http.StatusOK)
						if st != http.StatusServiceUnavailable {
							t.Errorf("MCP request past check_cache_ttl during the outage: %d, want 503", st)
						}
					}
				})
			}
			pg.Restore()
			after := newTally("after the restore (" + mode.name + ")")
			for _, u := range users {
				start := time.Now()
				st, code, tr := u.c.refreshStatus(u.refresh)
				after.add(st, time.Since(start), false)
				if st != http.StatusOK {
					t.Fatalf("refresh after the restore: %d %s", st, code)
				}
				u.refresh = tr.RefreshToken
				for _, tok := range []string{u.uncached, u.cached, tr.AccessToken} {
					start = time.Now()
					st := mcp(s.MCPURL, tok)
					after.add(st, time.Since(start), false)
					if st != http.StatusOK {
						t.Errorf("tool call after the restore: %d", st)
					}
				}
			}
			report(t, refresh, uncached, cached, expired, after)
			got := countRecords(t, direct)
			t.Logf("RELIABILITY %s: after the restore: %s", t.Name(), got)
			if got != before {
				t.Errorf("records after the outage: %s, want %s", got, before)
			}
		})
	}
}
