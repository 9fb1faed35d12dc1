package server

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/shared/checkapi"
	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/tokensvc/secret"
	"github.com/mcpmesh/gateway/tokensvc/store"
	"github.com/mcpmesh/gateway/tokensvc/store/postgres/pgtest"
)

// newBackendServer returns a server on the configured backend (sqlite in a temp dir, or
// PostgreSQL in a fresh schema when GATEWAY_TEST_POSTGRES_DSN is set; skipped otherwise).
func newBackendServer(tb testing.TB, backend string) (*Server, *config.Config) {
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
	srv, err := New(context.Background(), cfg, WithConnector(newIDP()), WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = srv.Close() })
	return srv, cfg
}

// seedToken stores a live session and an unbound External Token on srv's store.
func seedToken(tb testing.TB, st store.Store) string {
	tb.Helper()
	ctx := context.Background()
	now := time.Now()
	s := store.Session{ID: secret.NewToken(), Subject: "alice", Email: "alice@example.com", Claims: []byte(`{"sub":"alice"}`), CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	if err := st.CreateSession(ctx, s); err != nil {
		tb.Fatal(err)
	}
	tok := secret.NewToken()
	if err := st.CreateAccessToken(ctx, store.AccessToken{Hash: secret.Hash(tok), ClientID: "c", SessionID: s.ID, Subject: "alice", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
		tb.Fatal(err)
	}
	return tok
}

func checkRequest(cfg *config.Config, body []byte) *http.Request {
	r := httptest.NewRequest(http.MethodPost, paths.Check, strings.NewReader(string(body)))
	r.Header.Set(checkapi.KeyHeader, cfg.FilterKey())
	return r
}

func TestCheck_OnPersistentBackends(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			srv, cfg := newBackendServer(t, backend)
			body, _ := json.Marshal(checkapi.Request{RouteID: demoRoute, Host: "mcp.example.com", Token: seedToken(t, srv.Store())})
			rec := httptest.NewRecorder()
			srv.InternalHandler().ServeHTTP(rec, checkRequest(cfg, body))
			if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"sub":"alice"`) {
				t.Fatalf("status %d %s", rec.Code, rec.Body.String())
			}
		})
	}
}

func benchmarkCheckBackend(b *testing.B, backend string) {
	srv, cfg := newBackendServer(b, backend)
	body, _ := json.Marshal(checkapi.Request{RouteID: demoRoute, Host: "mcp.example.com", Token: seedToken(b, srv.Store())})
	h := srv.InternalHandler()
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, checkRequest(cfg, body))
		if rec.Code != 200 {
			b.Fatal(rec.Code, rec.Body.String())
		}
	}
}

func BenchmarkCheck_Token_SQLite(b *testing.B)   { benchmarkCheckBackend(b, "sqlite") }
func BenchmarkCheck_Token_Postgres(b *testing.B) { benchmarkCheckBackend(b, "postgres") }
