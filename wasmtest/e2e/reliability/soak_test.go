package reliability

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
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
	at       time.Duration
	replicas []int64 // RSS of each token service replica
	gateway  int64   // RSS of the gateway process
	gwHeap   uint64  // the gateway process's live Go heap after a collection
	vms      []uint32
	load     int64 // RSS of this test process: the 2,000 simulated clients
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

func (m memSample) String() string {
	var reps []string
	for _, r := range m.replicas {
		reps = append(reps, mib(r))
	}
	return fmt.Sprintf("t=%v tokensvc replicas RSS %s; gateway process RSS %s, live heap %s, filter VMs %v bytes; load generator (this process) RSS %s",
		m.at.Round(time.Second), strings.Join(reps, " / "), mib(m.gateway), mib(int64(m.gwHeap)), m.vms, mib(m.load))
}

// TestSoak runs 2,000 signed-in users (seeded: see seedUsers) through the gateway for
// GATEWAY_SOAK (default 10 minutes): each calls a tool about every 10 s and refreshes when its
// access token (60 s) is about to expire, as MCP clients do; one request in 50 carries a
// garbage token instead. The token service is two real tokensvc processes on one PostgreSQL
// schema; the gateway (filter.wasm in the wazero host) is a process of its own
// (gwprocess_test.go), so that this test process is only the load generator. Every
// legitimate request must succeed, no garbage one may pass, and the memory of every process
// must be flat: at the end within 25% of what it was a fifth of the way in (after warm-up) —
// each replica's RSS, the gateway process's RSS and live heap, and each filter VM's linear
// memory. The load generator's RSS is reported, not judged. It runs under make reliability
// only.
func TestSoak(t *testing.T) {
	if !full() {
		t.Skip("the soak runs under make reliability (GATEWAY_RELIABILITY=full)")
	}
	dsn := pgtest.DSN(t)
	bin := buildTokensvc(t)
	d := soakDuration(t)
	var reps []*replica
	s := startStack(t, stackOptions{
		Storage: fmt.Sprintf("{type: postgres, dsn: %q}", dsn), Quiet: true,
		GatewayProcess: func(t *testing.T, s *rstack) (public, internal []string) {
			s.YAML = strings.Replace(s.YAML, "token_service:\n", "token_service:\n  access_token_lifetime: 60s\n", 1)
			for range 2 {
				r := newReplica(t, bin, s.YAML)
				r.start(t)
				reps = append(reps, r)
				public, internal = append(public, "http://"+r.public), append(internal, "http://"+r.internal)
			}
			return public, internal
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
	t.Logf("RELIABILITY %s: %d users seeded, running %v; the gateway process's admin (GET /memory, /debug/pprof/heap): %s", t.Name(), n, d, s.GatewayProc.admin)

	calls, refreshes, garbage := newTally("soak: tool calls"), newTally("soak: refreshes"), newTally("soak: garbage tokens")
	start := time.Now()
	deadline := start.Add(d)
	sample := func() memSample {
		m := memSample{at: time.Since(start), gateway: rssBytes(s.GatewayProc.pid()), load: rssBytes(os.Getpid())}
		for _, r := range reps {
			m.replicas = append(m.replicas, rssBytes(r.pid()))
		}
		gm, err := s.GatewayProc.memory()
		if err != nil {
			t.Errorf("gateway memory: %v", err)
		}
		m.gwHeap, m.vms = gm.HeapAlloc, gm.VMs
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
	t.Logf("RELIABILITY %s: memory at the first sample: %s", t.Name(), samples[0])
	pairs := map[string][2]int64{
		"gateway process RSS":       {warm.gateway, end.gateway},
		"gateway process live heap": {int64(warm.gwHeap), int64(end.gwHeap)},
	}
	for i := range warm.replicas {
		pairs["tokensvc replica "+strconv.Itoa(i)+" RSS"] = [2]int64{warm.replicas[i], end.replicas[i]}
	}
	for i := range warm.vms {
		pairs["filter VM "+strconv.Itoa(i)+" linear memory"] = [2]int64{int64(warm.vms[i]), int64(end.vms[i])}
	}
	for name, pair := range pairs {
		if pair[0] <= 0 || pair[1] <= 0 {
			t.Errorf("%s: not measured (%d, %d)", name, pair[0], pair[1])
		}
		if pair[1] > pair[0]+pair[0]/4 {
			t.Errorf("%s grew from %d to %d bytes: not flat", name, pair[0], pair[1])
		}
	}
}
