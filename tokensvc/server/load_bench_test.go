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

// loadClients are the concurrent clients of the load benchmarks: one (latency without
// queueing) and eight (four per core of the 2-core machine: throughput at saturation).
var loadClients = []int{1, 8}

// runLoad runs b.N calls of do spread over clients goroutines, each with its own state from
// newClient, and reports latency percentiles and throughput.
func runLoad[S any](b *testing.B, clients int, newClient func() S, do func(S) (S, error)) {
	l := &latencies{d: make([]time.Duration, 0, b.N)}
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	l.start = time.Now()
	for range clients {
		st := newClient()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				t0 := time.Now()
				var err error
				if st, err = do(st); err != nil {
					b.Error(err)
					return
				}
				l.add(time.Since(t0))
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	l.report(b)
}

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
	return &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}, Timeout: 10 * time.Second}
}

// BenchmarkLoad_Check is the check API over loopback HTTP (each client a filter VM missing
// its cache), with 64 distinct External Tokens: latency percentiles and throughput per backend.
func BenchmarkLoad_Check(b *testing.B) {
	for _, backend := range []string{"sqlite", "postgres"} {
		for _, clients := range loadClients {
			b.Run(fmt.Sprintf("%s/clients=%d", backend, clients), func(b *testing.B) {
				srv, cfg := newBackendServer(b, backend)
				bodies := make([][]byte, 64)
				for i := range bodies {
					bodies[i], _ = json.Marshal(checkapi.Request{RouteID: demoRoute, Host: "mcp.example.com", Token: seedToken(b, srv.Store())})
				}
				ts := httptest.NewServer(srv.InternalHandler())
				defer ts.Close()
				hc := loopbackClient()
				var n atomic.Int64
				runLoad(b, clients, func() struct{} { return struct{}{} }, func(st struct{}) (struct{}, error) {
					body := bodies[n.Add(1)%int64(len(bodies))]
					req, _ := http.NewRequest(http.MethodPost, ts.URL+paths.Check, strings.NewReader(string(body)))
					req.Header.Set(checkapi.KeyHeader, cfg.FilterKey())
					resp, err := hc.Do(req)
					if err != nil {
						return st, err
					}
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						return st, fmt.Errorf("status %d", resp.StatusCode)
					}
					return st, nil
				})
			})
		}
	}
}

// BenchmarkLoad_RefreshGrant is the token endpoint's refresh_token grant over loopback HTTP,
// each client rotating its own refresh-token family: latency percentiles and throughput per
// backend.
func BenchmarkLoad_RefreshGrant(b *testing.B) {
	for _, backend := range []string{"sqlite", "postgres"} {
		for _, clients := range loadClients {
			b.Run(fmt.Sprintf("%s/clients=%d", backend, clients), func(b *testing.B) {
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
				var grants atomic.Int64
				newFamily := func() string {
					tok := secret.NewToken()
					g := store.Grant{ID: fmt.Sprintf("grant-%d", grants.Add(1)), ClientID: client.ID, SessionID: sess.ID, Subject: "alice",
						Resource: demoRoute, CreatedAt: now, ExpiresAt: now.Add(24 * time.Hour)}
					if err := st.CreateGrant(ctx, g, store.RefreshToken{Hash: secret.Hash(tok), GrantID: g.ID, CreatedAt: now, ExpiresAt: now.Add(24 * time.Hour)}); err != nil {
						b.Fatal(err)
					}
					return tok
				}
				ts := httptest.NewServer(srv.PublicHandler())
				defer ts.Close()
				hc := loopbackClient()
				runLoad(b, clients, newFamily, func(rt string) (string, error) {
					form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {client.ID}}
					req, _ := http.NewRequest(http.MethodPost, ts.URL+paths.Token, strings.NewReader(form.Encode()))
					req.Host = "mcp.example.com"
					req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
					resp, err := hc.Do(req)
					if err != nil {
						return rt, err
					}
					var out struct {
						RefreshToken string `json:"refresh_token"`
						Error        string `json:"error_description"`
					}
					err = json.NewDecoder(resp.Body).Decode(&out)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK || err != nil || out.RefreshToken == "" {
						return rt, fmt.Errorf("refresh: %d %v %s", resp.StatusCode, err, out.Error)
					}
					return out.RefreshToken, nil
				})
			})
		}
	}
}
