package server

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/tokensvc/store/memory"
	"github.com/mcpmesh/gateway/tokensvc/upstream"
)

// TI refreshes are counted by outcome in upstream_token_refreshes_total.
func TestMetrics_UpstreamRefreshes(t *testing.T) {
	t.Parallel()
	cfg, err := config.Parse([]byte(testConfigYAML), nil)
	if err != nil {
		t.Fatal(err)
	}
	refuse := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if strings.Contains(r.PostFormValue("refresh_token"), "revoked") {
			w.WriteHeader(400)
			io.WriteString(w, `{"error":"invalid_grant"}`)
			return
		}
		benchTokenEndpoint().ServeHTTP(w, r)
	})
	srv, err := New(context.Background(), cfg, WithStore(memory.New()), WithConnector(newIDP()), WithLogger(slog.New(slog.DiscardHandler)),
		WithUpstreamHTTPClient(&http.Client{Transport: inProcess{refuse}}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	ctx := context.Background()
	expired := time.Now().Add(-time.Second)
	for _, u := range []struct{ sub, rt string }{{"alice", "rt-1"}, {"bob", "rt-revoked"}} {
		if err := srv.Upstream().SaveToken(ctx, u.sub, ghRoute, upstream.Token{AccessToken: "old", RefreshToken: u.rt, Expiry: expired}); err != nil {
			t.Fatal(err)
		}
		_, _, _ = srv.Upstream().Token(ctx, u.sub, ghRoute)
	}
	rec := httptest.NewRecorder()
	srv.InternalHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://tokensvc.internal"+paths.Metrics, nil))
	for _, want := range []string{
		`mcp_gateway_tokensvc_upstream_token_refreshes_total{outcome="refreshed"} 1`,
		`mcp_gateway_tokensvc_upstream_token_refreshes_total{outcome="refused"} 1`,
		`mcp_gateway_tokensvc_upstream_token_refreshes_total{outcome="failed"} 0`,
		`mcp_gateway_tokensvc_upstream_connects_total{outcome="connected"} 0`,
	} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	// A second server on the same metrics (a reload) shares the series.
	if _, err := New(context.Background(), cfg, WithStore(memory.New()), WithConnector(newIDP()), WithMetrics(srv.Metrics()), WithLogger(slog.New(slog.DiscardHandler))); err != nil {
		t.Fatalf("second server on the same metrics: %v", err)
	}
}
