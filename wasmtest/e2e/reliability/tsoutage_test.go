package reliability

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/tokensvc/store/postgres/pgtest"
	"github.com/mcpmesh/gateway/wasmtest/gateway"
)

// outageTTL is token_service.check_cache_ttl in the token service outage test: cached
// decisions carry requests through an outage for this long.
const outageTTL = 6 * time.Second

// TestTokenServiceOutage runs the token service as two real tokensvc processes on one
// PostgreSQL schema behind the gateway (gateway.RemoteTokenService, what the local gateway's
// -token-service-public/-internal flags use) and takes them away under traffic:
//   - one replica killed (SIGKILL): every request still succeeds (the other replica serves,
//     connect failures are retried there), sign-in included;
//   - both killed, both replaced by stand-ins that never answer, or by stand-ins that answer
//     garbage: requests with a cached decision are 200 until check_cache_ttl, every other MCP
//     request is 503 — never 401 (a client would throw its token away), never allowed;
//   - replicas back: the tokens from before, refresh and a new sign-in all work, without
//     restarting the gateway; the store lost nothing.
func TestTokenServiceOutage(t *testing.T) {
	dsn := pgtest.DSN(t)
	bin := buildTokensvc(t)
	var reps []*replica
	s := startStack(t, stackOptions{
		Storage:       fmt.Sprintf("{type: postgres, dsn: %q}", dsn),
		CheckCacheTTL: outageTTL,
		Remote: func(t *testing.T, s *rstack) gateway.TokenService {
			var pub, in []string
			for range 2 {
				r := newReplica(t, bin, s.YAML)
				r.start(t)
				reps = append(reps, r)
				pub, in = append(pub, "http://"+r.public), append(in, "http://"+r.internal)
			}
			ts, err := gateway.RemoteTokenService(pub, in, nil)
			if err != nil {
				t.Fatal(err)
			}
			return ts
		},
	})
	users := signInUsers(t, s, scale(4, 16))
	want := countRecords(t, dsn)
	t.Logf("RELIABILITY %s: at the start: %s", t.Name(), want)
	restart := func(t *testing.T) {
		for _, r := range reps {
			r.start(t)
		}
	}
	killAll := func() {
		for _, r := range reps {
			r.kill()
		}
	}
	addrs := func() []string {
		var a []string
		for _, r := range reps {
			a = append(a, r.public, r.internal)
		}
		return a
	}

	t.Run("OneReplicaKilled", func(t *testing.T) {
		reps[0].kill()
		tl := newTally("one of two replicas killed")
		for range scale(5, 20) {
			for _, u := range users {
				start := time.Now()
				st, code, tr := u.c.refreshStatus(u.refresh)
				tl.add(st, time.Since(start), false)
				if st != http.StatusOK {
					t.Fatalf("refresh with one replica killed: %d %s", st, code)
				}
				u.refresh = tr.RefreshToken
				start = time.Now()
				st = mcp(s.MCPURL, tr.AccessToken)
				tl.add(st, time.Since(start), false)
				if st != http.StatusOK {
					t.Fatalf("tool call with a new token, one replica killed: %d", st)
				}
			}
		}
		newcomer := s.signIn(t) // sign-in (browser, IdP callback) through the surviving replica
		if st := mcp(s.MCPURL, newcomer.Token.AccessToken); st != http.StatusOK {
			t.Fatalf("tool call of a user signed in with one replica killed: %d", st)
		}
		want.Sessions, want.Grants, want.RefreshTokens = want.Sessions+1, want.Grants+1, want.RefreshTokens+1
		report(t, tl)
		reps[0].start(t)
	})

	for _, mode := range []struct {
		name  string
		fault func(t *testing.T) func()
	}{
		{"BothKilled", func(*testing.T) func() { killAll(); return func() {} }},
		{"NeverAnswering", func(t *testing.T) func() { killAll(); return startStandIns(t, false, addrs()...).stop }},
		{"AnsweringGarbage", func(t *testing.T) func() { killAll(); return startStandIns(t, true, addrs()...).stop }},
	} {
		t.Run(mode.name, func(t *testing.T) {
			for _, u := range users {
				u.prime(t, s)
			}
			primed := time.Now()
			restore := mode.fault(t)
			cached := newTally("cached MCP requests (" + mode.name + ")")
			uncached := newTally("uncached MCP requests (" + mode.name + ")")
			refresh := newTally("refresh (" + mode.name + ")")
			// Refreshes run beside the MCP traffic: against a token service that never
			// answers each waits for the gateway's response timeout (15 s, 504).
			refreshed := make(chan struct{})
			go func() {
				defer close(refreshed)
				eachUser(users, func(u *user) {
					start := time.Now()
					st, code, _ := u.c.refreshStatus(u.refresh)
					refresh.add(st, time.Since(start), st == http.StatusOK && mode.name != "AnsweringGarbage")
					if st == http.StatusUnauthorized || code == "invalid_grant" || code == "invalid_client" {
						t.Errorf("refresh with the token service %s: %d %s", mode.name, st, code)
					}
				})
			}()
			for round := 0; round < 200 && time.Since(primed) < outageTTL-time.Second; round++ {
				if round > 0 {
					time.Sleep(20 * time.Millisecond) // paced: a steady load, not a flood
				}
				eachUser(users, func(u *user) {
					start := time.Now()
					st := mcp(s.MCPURL, u.cached)
					if time.Since(primed) < outageTTL-time.Second/2 { // clear of the expiry
						cached.add(st, time.Since(start), false)
						if st != http.StatusOK {
							t.Errorf("cached MCP request: %d, want 200", st)
						}
					}
					start = time.Now()
					st = mcp(s.MCPURL, u.uncached)
					uncached.add(st, time.Since(start), st == http.StatusOK)
					if st != http.StatusServiceUnavailable {
						t.Errorf("uncached MCP request: %d, want 503", st)
					}
				})
			}
			time.Sleep(time.Until(primed.Add(outageTTL + 500*time.Millisecond)))
			<-refreshed
			expired := newTally("cached past check_cache_ttl (" + mode.name + ")")
			eachUser(users, func(u *user) {
				start := time.Now()
				st := mcp(s.MCPURL, u.cached)
				expired.add(st, time.Since(start), st == http.StatusOK)
				if st != http.StatusServiceUnavailable {
					t.Errorf("MCP request past check_cache_ttl: %d, want 503", st)
				}
			})
			restore()
			restart(t)
			after := newTally("replicas back (" + mode.name + ")")
			for _, u := range users {
				for _, tok := range []string{u.cached, u.uncached} {
					start := time.Now()
					st := mcp(s.MCPURL, tok)
					after.add(st, time.Since(start), false)
					if st != http.StatusOK {
						t.Errorf("old access token with the replicas back: %d", st)
					}
				}
				start := time.Now()
				st, code, tr := u.c.refreshStatus(u.refresh)
				after.add(st, time.Since(start), false)
				if st != http.StatusOK {
					t.Fatalf("refresh with the replicas back: %d %s", st, code)
				}
				u.refresh = tr.RefreshToken
			}
			report(t, refresh, cached, uncached, expired, after)
		})
	}

	got := countRecords(t, dsn)
	t.Logf("RELIABILITY %s: at the end: %s", t.Name(), got)
	if got != want {
		t.Errorf("records at the end: %s, want %s", got, want)
	}
	newcomer := s.signIn(t)
	if st := mcp(s.MCPURL, newcomer.Token.AccessToken); st != http.StatusOK {
		t.Fatalf("sign-in after the outages, without restarting the gateway: %d", st)
	}
}
