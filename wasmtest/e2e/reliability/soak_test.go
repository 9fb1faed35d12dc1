package reliability

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/mcpmesh/gateway/tokensvc/secret"
	"github.com/mcpmesh/gateway/tokensvc/store"
	"github.com/mcpmesh/gateway/tokensvc/store/postgres"
	"github.com/mcpmesh/gateway/tokensvc/store/postgres/pgtest"
	"github.com/mcpmesh/gateway/wasmtest/gateway"
)

// soakDuration is how long TestSoak runs: GATEWAY_SOAK (a Go duration), default 10m.
func soakDuration(t *testing.T) time.Duration {
	if v := os.Getenv("GATEWAY_SOAK"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("GATEWAY_SOAK: %v", err)
		}
		return d
	}
	return 10 * time.Minute
}

// soakUser is one seeded user: a grant of the soak client with a refresh token, and the
// access token it holds with its expiry.
type soakUser struct {
	c       *client
	refresh string
	access  string
	expires time.Time
}

// seedUsers stores n signed-in users straight into the store — a test-only seeding tool (the
// real sign-in flow is exercised by every other test of this package): a session, a grant of
// clientID with its refresh token, and an access token expiring after ttl.
func seedUsers(t *testing.T, st store.Store, clientID string, n int, ttl time.Duration) []*soakUser {
	t.Helper()
	ctx, now := context.Background(), time.Now()
	us := make([]*soakUser, n)
	for i := range n {
		sess := store.Session{ID: secret.NewToken(), Subject: "soak-" + strconv.Itoa(i), Email: "soak" + strconv.Itoa(i) + "@example.com",
			Claims: []byte(`{"sub":"soak"}`), CreatedAt: now, ExpiresAt: now.Add(24 * time.Hour)}
		g := store.Grant{ID: secret.NewToken(), ClientID: clientID, SessionID: sess.ID, Subject: sess.Subject, Scope: "offline_access",
			CreatedAt: now, ExpiresAt: now.Add(24 * time.Hour)}
		u := &soakUser{refresh: secret.NewToken(), access: secret.NewToken(), expires: now.Add(ttl)}
		err := st.CreateSession(ctx, sess)
		if err == nil {
			err = st.CreateGrant(ctx, g, store.RefreshToken{Hash: secret.Hash(u.refresh), CreatedAt: now, ExpiresAt: g.ExpiresAt})
		}
		if err == nil {
			err = st.CreateAccessToken(ctx, store.AccessToken{Hash: secret.Hash(u.access), GrantID: g.ID, ClientID: clientID,
				SessionID: sess.ID, Subject: sess.Subject, Scope: g.Scope, CreatedAt: now, ExpiresAt: u.expires})
		}
		if err != nil {
			t.Fatalf("seed user %d: %v", i, err)
		}
		us[i] = u
	}
	return us
}

// rssBytes reads a process's resident set size from /proc.
func rssBytes(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return -1
}

// memSample is the memory of every process at one moment.
type memSample struct {
	at                time.Duration
	tokensvc, gateway int64 // RSS
	heap              uint64
	vms               []uint32
}

func (m memSample) String() string {
	return fmt.Sprintf("t=%v tokensvc RSS %.1f MiB, gateway (this process, with the test's 2,000 clients) RSS %.1f MiB, live Go heap %.1f MiB, filter VMs %v bytes",
		m.at.Round(time.Second), float64(m.tokensvc)/(1<<20), float64(m.gateway)/(1<<20), float64(m.heap)/(1<<20), m.vms)
}

// TestSoak runs 2,000 signed-in users (seeded: see seedUsers) through the gateway for
// GATEWAY_SOAK (default 10 minutes): each calls a tool about every 10 s and refreshes when its
// access token (60 s) is about to expire, as MCP clients do; one request in 50 carries a
// garbage token instead. The token service is a real tokensvc process on PostgreSQL.
// Every legitimate request must succeed, no garbage one may pass, and the memory of every
// process must be flat: at the end within 25% of what it was a fifth of the way in (after
// warm-up) — the token service's RSS and each filter VM's linear memory. The gateway runs in
// this test process beside the 2,000 simulated clients, so the process's RSS and live heap
// are reported but not judged. It runs under make reliability only.
func TestSoak(t *testing.T) {
	if !full() {
		t.Skip("the soak runs under make reliability (GATEWAY_RELIABILITY=full)")
	}
	dsn := pgtest.DSN(t)
	bin := buildTokensvc(t)
	d := soakDuration(t)
	var rep *replica
	s := startStack(t, stackOptions{
		Storage: fmt.Sprintf("{type: postgres, dsn: %q}", dsn), Quiet: true,
		Remote: func(t *testing.T, s *rstack) gateway.TokenService {
			s.YAML = strings.Replace(s.YAML, "token_service:\n", "token_service:\n  access_token_lifetime: 60s\n", 1)
			rep = newReplica(t, bin, s.YAML)
			rep.start(t)
			ts, err := gateway.RemoteTokenService([]string{"http://" + rep.public}, []string{"http://" + rep.internal}, nil)
			if err != nil {
				t.Fatal(err)
			}
			return ts
		},
	})
	st, err := postgres.New(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const clientID = "soak-client"
	if err := st.CreateClient(context.Background(), store.Client{ID: clientID, Kind: store.ClientDynamic, Name: "soak",
		RedirectURIs: []string{redirectURI}, GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"},
		TokenEndpointAuthMethod: "none", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	n := 2000
	users := seedUsers(t, st, clientID, n, 60*time.Second)
	cfg := &oauth2.Config{ClientID: clientID, Endpoint: oauth2.Endpoint{TokenURL: s.MCPOrigin + "/.gateway/mcp/token"}}
	for _, u := range users {
		u.c = &client{Config: cfg}
	}
	t.Logf("RELIABILITY %s: %d users seeded, running %v", t.Name(), n, d)

	calls, refreshes, garbage := newTally("soak: tool calls"), newTally("soak: refreshes"), newTally("soak: garbage tokens")
	start := time.Now()
	deadline := start.Add(d)
	sample := func() memSample {
		// The live heap after a collection: RSS of a Go process stays near its peak.
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		m := memSample{at: time.Since(start), tokensvc: rssBytes(rep.pid()), gateway: rssBytes(os.Getpid()), heap: ms.HeapAlloc}
		for i := range s.Gateway.Host().Workers() {
			m.vms = append(m.vms, s.Gateway.Host().MemoryBytes(i))
		}
		return m
	}
	var samples []memSample
	var smu sync.Mutex
	stop := make(chan struct{})
	var bg sync.WaitGroup
	bg.Go(func() {
		tick := time.NewTicker(d / 20)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				m := sample()
				smu.Lock()
				samples = append(samples, m)
				smu.Unlock()
				t.Logf("RELIABILITY %s: %s", t.Name(), m)
			}
		}
	})
	var wg sync.WaitGroup
	for i, u := range users {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			time.Sleep(time.Duration(rng.Int64N(int64(10 * time.Second))))
			for time.Now().Before(deadline) {
				if time.Until(u.expires) < 5*time.Second {
					t0 := time.Now()
					code, desc, tr := u.c.refreshStatus(u.refresh)
					refreshes.add(code, time.Since(t0), false)
					if code != http.StatusOK {
						t.Errorf("soak: refresh: %d %s", code, desc)
						return
					}
					u.refresh, u.access, u.expires = tr.RefreshToken, tr.AccessToken, time.Now().Add(time.Duration(tr.ExpiresIn)*time.Second)
				}
				t0 := time.Now()
				if rng.IntN(50) == 0 {
					code := mcp(s.MCPURL, "garbage-"+secret.NewToken())
					garbage.add(code, time.Since(t0), code == http.StatusOK)
				} else {
					code := mcp(s.MCPURL, u.access)
					calls.add(code, time.Since(t0), false)
					if code != http.StatusOK {
						t.Errorf("soak: tool call: %d", code)
					}
				}
				time.Sleep(8*time.Second + time.Duration(rng.Int64N(int64(4*time.Second))))
			}
		})
	}
	wg.Wait()
	close(stop)
	bg.Wait()
	report(t, calls, refreshes, garbage)
	if garbage.wrong > 0 {
		t.Errorf("%d garbage tokens were allowed", garbage.wrong)
	}
	if len(samples) < 5 {
		t.Fatalf("only %d memory samples", len(samples))
	}
	warm, end := samples[len(samples)/5], samples[len(samples)-1]
	t.Logf("RELIABILITY %s: memory after warm-up: %s", t.Name(), warm)
	t.Logf("RELIABILITY %s: memory at the end:    %s", t.Name(), end)
	// The gateway shares this process with the 2,000 simulated clients, whose connection
	// pools and samples come and go: its heap is reported, not judged.
	pairs := map[string][2]int64{"tokensvc RSS": {warm.tokensvc, end.tokensvc}}
	for i := range warm.vms {
		pairs["filter VM "+strconv.Itoa(i)+" linear memory"] = [2]int64{int64(warm.vms[i]), int64(end.vms[i])}
	}
	for name, pair := range pairs {
		if pair[1] > pair[0]+pair[0]/4 {
			t.Errorf("%s grew from %d to %d bytes: not flat", name, pair[0], pair[1])
		}
	}
}
