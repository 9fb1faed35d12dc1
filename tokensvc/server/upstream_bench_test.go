package server

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/shared/checkapi"
	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/tokensvc/secret"
	"github.com/mcpmesh/gateway/tokensvc/store"
	"github.com/mcpmesh/gateway/tokensvc/store/postgres/pgtest"
	"github.com/mcpmesh/gateway/tokensvc/upstream"
)

// inProcess is an http.RoundTripper that serves every request with h: the upstream token
// endpoint of the benchmarks, without a network hop, so the figures are the gateway's own.
type inProcess struct{ h http.Handler }

func (p inProcess) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	p.h.ServeHTTP(rec, r)
	return rec.Result(), nil
}

// benchTokenEndpoint issues a fresh access and refresh token on every refresh_token grant,
// expiring in 30 s: inside the refresh margin, so every Token call refreshes again.
func benchTokenEndpoint() http.Handler {
	var n atomic.Int64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := n.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token":"at-%d-%s","token_type":"Bearer","refresh_token":"rt-%d","expires_in":30}`, i, strings.Repeat("x", 32), i)
	})
}

// newUpstreamBackendServer is newBackendServer with the upstream token endpoint in process.
func newUpstreamBackendServer(tb testing.TB, backend string) (*Server, *config.Config) {
	tb.Helper()
	cfg, err := config.Parse([]byte(testConfigYAML), nil)
	if err != nil {
		tb.Fatal(err)
	}
	switch backend {
	case "sqlite":
		cfg.Storage = config.Storage{Type: "sqlite", Path: filepath.Join(tb.TempDir(), "gw.db")}
	case "postgres":
		cfg.Storage = config.Storage{Type: "postgres", DSN: pgtest.DSN(tb)}
	}
	srv, err := New(context.Background(), cfg, WithConnector(newIDP()), WithLogger(slog.New(slog.DiscardHandler)),
		WithUpstreamHTTPClient(&http.Client{Transport: inProcess{benchTokenEndpoint()}}))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = srv.Close() })
	return srv, cfg
}

// seedUpstreamUser stores a live session of subject, an External Token and a fresh TI for
// the upstream_oauth2 route.
func seedUpstreamUser(tb testing.TB, srv *Server, subject string, ti upstream.Token) string {
	tb.Helper()
	ctx := context.Background()
	st := srv.Store()
	now := time.Now()
	s := store.Session{ID: secret.NewToken(), Subject: subject, Email: subject + "@example.com", Claims: []byte(`{"sub":"` + subject + `"}`), CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	if err := st.CreateSession(ctx, s); err != nil {
		tb.Fatal(err)
	}
	tok := secret.NewToken()
	if err := st.CreateAccessToken(ctx, store.AccessToken{Hash: secret.Hash(tok), ClientID: "c", SessionID: s.ID, Subject: subject, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
		tb.Fatal(err)
	}
	if err := srv.Upstream().SaveToken(ctx, subject, ghRoute, ti); err != nil {
		tb.Fatal(err)
	}
	return tok
}

// BenchmarkLoad_CheckUpstream is the check API over loopback HTTP on an upstream_oauth2 route
// (a filter cache miss): 64 users with fresh Internal Tokens, so each call also reads and
// unseals the user's TI.
func BenchmarkLoad_CheckUpstream(b *testing.B) {
	for _, backend := range []string{"sqlite", "postgres"} {
		for _, clients := range loadClients {
			b.Run(fmt.Sprintf("%s/clients=%d", backend, clients), func(b *testing.B) {
				srv, cfg := newUpstreamBackendServer(b, backend)
				bodies := make([][]byte, 64)
				for i := range bodies {
					te := seedUpstreamUser(b, srv, fmt.Sprintf("user-%d", i), upstream.Token{AccessToken: "ti-" + secret.NewToken(), RefreshToken: "rt", Expiry: time.Now().Add(time.Hour)})
					bodies[i], _ = json.Marshal(checkapi.Request{RouteID: ghRoute, Host: "gh.example.com", Token: te})
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
					var out checkapi.Response
					err = json.NewDecoder(resp.Body).Decode(&out)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK || err != nil || out.UpstreamToken == "" {
						return st, fmt.Errorf("status %d %v", resp.StatusCode, err)
					}
					return st, nil
				})
			})
		}
	}
}

// BenchmarkLoad_UpstreamRefresh is TI refreshes: each call finds the user's TI due and
// refreshes it under the store lease (lease, one token endpoint call in process, sealed
// write-back). Each client is its own user.
func BenchmarkLoad_UpstreamRefresh(b *testing.B) {
	for _, backend := range []string{"sqlite", "postgres"} {
		for _, clients := range loadClients {
			b.Run(fmt.Sprintf("%s/clients=%d", backend, clients), func(b *testing.B) {
				srv, _ := newUpstreamBackendServer(b, backend)
				var users atomic.Int64
				runLoad(b, clients, func() string {
					subject := fmt.Sprintf("user-%d", users.Add(1))
					seedUpstreamUser(b, srv, subject, upstream.Token{AccessToken: "ti", RefreshToken: "rt-seed", Expiry: time.Now().Add(-time.Second)})
					return subject
				}, func(subject string) (string, error) {
					ti, _, err := srv.Upstream().Token(context.Background(), subject, ghRoute)
					if err != nil || !strings.HasPrefix(ti, "at-") {
						return subject, fmt.Errorf("refresh: %q %v", ti, err)
					}
					return subject, nil
				})
			})
		}
	}
}
