package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/shared/checkapi"
	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/tokensvc/secret"
	"github.com/mcpmesh/gateway/tokensvc/store"
)

// loadClients is the number of concurrent clients of the load benchmarks (8 per 2 cores).
const loadClients = 8

// latencies collects per-request durations from concurrent clients and reports p50, p99 and
// throughput.
type latencies struct {
	mu    sync.Mutex
	d     []time.Duration
	start time.Time
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	l.d = append(l.d, d)
	l.mu.Unlock()
}

func (l *latencies) report(b *testing.B) {
	elapsed := time.Since(l.start)
	slices.Sort(l.d)
	if len(l.d) == 0 {
		return
	}
	pct := func(p float64) float64 { return float64(l.d[int(p*float64(len(l.d)-1))].Microseconds()) }
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.99), "p99-µs")
	b.ReportMetric(float64(len(l.d))/elapsed.Seconds(), "req/s")
}

func loopbackClient() *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * loadClients}, Timeout: 10 * time.Second}
}

// BenchmarkLoad_Check is the check API over loopback HTTP under loadClients concurrent callers
// (each a filter VM missing its cache), with 64 distinct External Tokens: latency percentiles
// and throughput per backend.
func BenchmarkLoad_Check(b *testing.B) {
	for _, backend := range []string{"sqlite", "postgres"} {
		b.Run(backend, func(b *testing.B) {
			srv, cfg := newBackendServer(b, backend)
			bodies := make([][]byte, 64)
			for i := range bodies {
				bodies[i], _ = json.Marshal(checkapi.Request{RouteID: demoRoute, Host: "mcp.example.com", Token: seedToken(b, srv.Store())})
			}
			ts := httptest.NewServer(srv.InternalHandler())
			defer ts.Close()
			client := loopbackClient()
			var n atomic.Int64
			l := &latencies{start: time.Now()}
			b.SetParallelism(loadClients / 2) // RunParallel starts parallelism × GOMAXPROCS (2) goroutines
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					body := bodies[n.Add(1)%int64(len(bodies))]
					req, _ := http.NewRequest(http.MethodPost, ts.URL+paths.Check, strings.NewReader(string(body)))
					req.Header.Set(checkapi.KeyHeader, cfg.FilterKey())
					t0 := time.Now()
					resp, err := client.Do(req)
					if err != nil {
						b.Error(err)
						return
					}
					resp.Body.Close()
					l.add(time.Since(t0))
					if resp.StatusCode != http.StatusOK {
						b.Errorf("status %d", resp.StatusCode)
						return
					}
				}
			})
			l.report(b)
		})
	}
}

// BenchmarkLoad_RefreshGrant is the token endpoint's refresh_token grant over loopback HTTP
// under loadClients concurrent MCP clients, each rotating its own refresh-token family:
// latency percentiles and throughput per backend.
func BenchmarkLoad_RefreshGrant(b *testing.B) {
	for _, backend := range []string{"sqlite", "postgres"} {
		b.Run(backend, func(b *testing.B) {
			srv, _ := newBackendServer(b, backend)
			ctx := context.Background()
			st := srv.Store()
			now := time.Now()
			client := store.Client{ID: "bench-client", Kind: store.ClientDynamic, Name: "bench",
				RedirectURIs: []string{"http://127.0.0.1/cb"}, GrantTypes: []string{"authorization_code", "refresh_token"},
				ResponseTypes: []string{"code"}, TokenEndpointAuthMethod: "none", CreatedAt: now}
			if err := st.CreateClient(ctx, client); err != nil {
				b.Fatal(err)
			}
			sess := store.Session{ID: secret.NewToken(), Subject: "alice", Email: "alice@example.com", Claims: []byte(`{"sub":"alice"}`), CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
			if err := st.CreateSession(ctx, sess); err != nil {
				b.Fatal(err)
			}
			// One family per client goroutine; GOMAXPROCS×parallelism goroutines at most.
			chains := make(chan string, 64)
			for i := 0; i < 64; i++ {
				tok := secret.NewToken()
				g := store.Grant{ID: fmt.Sprintf("grant-%d", i), ClientID: client.ID, SessionID: sess.ID, Subject: "alice",
					Resource: demoRoute, CreatedAt: now, ExpiresAt: now.Add(24 * time.Hour)}
				if err := st.CreateGrant(ctx, g, store.RefreshToken{Hash: secret.Hash(tok), GrantID: g.ID, CreatedAt: now, ExpiresAt: now.Add(24 * time.Hour)}); err != nil {
					b.Fatal(err)
				}
				chains <- tok
			}
			ts := httptest.NewServer(srv.PublicHandler())
			defer ts.Close()
			hc := loopbackClient()
			l := &latencies{start: time.Now()}
			b.SetParallelism(loadClients / 2)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				rt := <-chains
				for pb.Next() {
					form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {client.ID}}
					req, _ := http.NewRequest(http.MethodPost, ts.URL+paths.Token, strings.NewReader(form.Encode()))
					req.Host = "mcp.example.com"
					req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
					t0 := time.Now()
					resp, err := hc.Do(req)
					if err != nil {
						b.Error(err)
						return
					}
					var out struct {
						RefreshToken string `json:"refresh_token"`
						Error        string `json:"error_description"`
					}
					err = json.NewDecoder(resp.Body).Decode(&out)
					resp.Body.Close()
					l.add(time.Since(t0))
					if resp.StatusCode != http.StatusOK || err != nil || out.RefreshToken == "" {
						b.Errorf("refresh: %d %v %s", resp.StatusCode, err, out.Error)
						return
					}
					rt = out.RefreshToken
				}
			})
			l.report(b)
		})
	}
}
