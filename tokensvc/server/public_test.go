package server

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/tokensvc/reqid"
	"github.com/mcpmesh/gateway/tokensvc/secret"
	"github.com/mcpmesh/gateway/tokensvc/store"
	"github.com/mcpmesh/gateway/tokensvc/upstream"
)

func TestPublic_ForgedHostIsMisdirected(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	for _, u := range []string{
		"https://evil.example.com" + paths.AuthorizationServerMetadata,
		"https://evil.example.com" + paths.SignIn,
		"https://evil.example.com" + paths.JWKS,
		"https://mcp.example.com.evil.com" + paths.Routes,
		"https://evil.example.com/nothing",
	} {
		if resp := e.public(http.MethodGet, u, nil); resp.StatusCode != http.StatusMisdirectedRequest {
			t.Errorf("%s: status %d, want 421", u, resp.StatusCode)
		}
	}
	// X-Forwarded-Host does not change the resolved host.
	resp := e.public(http.MethodGet, "https://evil.example.com"+paths.JWKS, http.Header{"X-Forwarded-Host": {"mcp.example.com"}})
	if resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("X-Forwarded-Host: status %d", resp.StatusCode)
	}
	// The health probe answers on any Host (kubelet probes use the pod IP).
	if resp := e.public(http.MethodGet, "http://10.1.2.3:8480"+paths.Health, nil); resp.StatusCode != 200 {
		t.Errorf("health: %d", resp.StatusCode)
	}
}

func TestPublic_HostsAndPaths(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	cases := []struct {
		url  string
		want int
	}{
		{"https://auth.example.com" + paths.JWKS, 200},
		{"https://app.example.com" + paths.JWKS, 200},
		{"https://mcp.example.com" + paths.AuthorizationServerMetadata, 200},
		{"https://mcp.example.com" + paths.SignIn + "?return_to=/mcp", http.StatusSeeOther},
		{"https://app.example.com" + paths.SignIn + "?return_to=//evil.com", 400},
		{"https://auth.example.com" + paths.SignIn, 404},
		{"https://mcp.example.com" + paths.AuthenticateSignIn, 404},
		{"https://mcp.example.com" + paths.Routes, 404},
		{"https://app.example.com/.gateway/unknown", 404},
	}
	for _, tc := range cases {
		resp := e.public(http.MethodGet, tc.url, nil)
		if resp.StatusCode != tc.want {
			t.Errorf("%s: status %d, want %d", tc.url, resp.StatusCode, tc.want)
		}
	}
	resp := e.public(http.MethodGet, "https://mcp.example.com"+paths.SignIn+"?return_to=/mcp", nil)
	if loc := resp.Header.Get("Location"); !strings.HasPrefix(loc, "https://auth.example.com"+paths.AuthenticateSignIn+"?state=") {
		t.Errorf("sign-in Location %q", loc)
	}
	h := resp.Header
	if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Referrer-Policy") != "no-referrer" || h.Get("X-Frame-Options") != "DENY" || h.Get("Cache-Control") != "no-store" {
		t.Errorf("security headers missing: %v", h)
	}
}

func TestPublic_RequestID(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	cases := []struct {
		in    string
		reuse bool
	}{
		{"abc-123_x.y", true},
		{strings.Repeat("a", 64), true},
		{strings.Repeat("a", 65), false},
		{"has space", false},
		{"inject\r\nSet-Cookie: x", false},
		{"", false},
	}
	for _, tc := range cases {
		resp := e.public(http.MethodGet, "https://auth.example.com"+paths.JWKS, http.Header{reqid.Header: {tc.in}})
		got := resp.Header.Get(reqid.Header)
		if (got == tc.in) != tc.reuse || got == "" {
			t.Errorf("X-Request-Id %q -> %q (reuse %v)", tc.in, got, tc.reuse)
		}
	}
}

func TestRoutes_ListsServersWithConnectedState(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	s := e.session("alice")
	tok := e.token(s, "", time.Hour)
	get := func(host, token string) *http.Response {
		h := http.Header{}
		if token != "" {
			h.Set("Authorization", "Bearer "+token)
		}
		return e.public(http.MethodGet, "https://"+host+paths.Routes, h)
	}
	resp := get("app.example.com", tok)
	if resp.StatusCode != 200 || resp.Header.Get("Cache-Control") != "no-store" || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d headers %v", resp.StatusCode, resp.Header)
	}
	var list RouteListing
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	want := []ListedServer{
		{Name: "Demo", URL: "https://mcp.example.com/mcp", Connected: true},
		{Name: "https://mcp.example.com/other", URL: "https://mcp.example.com/other", Connected: true},
		{Name: "GitHub", URL: "https://gh.example.com/mcp", Connected: false},
	}
	if len(list.Servers) != len(want) {
		t.Fatalf("servers = %+v", list.Servers)
	}
	for i := range want {
		if list.Servers[i] != want[i] {
			t.Errorf("servers[%d] = %+v, want %+v", i, list.Servers[i], want[i])
		}
	}
	// After connecting the upstream, GitHub is connected; a row that does not open is not.
	if err := e.store.PutUpstreamToken(context.Background(), store.UpstreamToken{Subject: "alice", RouteID: ghRoute, Sealed: []byte("x"), UpdatedAt: e.clock.now()}); err != nil {
		t.Fatal(err)
	}
	_ = json.NewDecoder(get("app.example.com", tok).Body).Decode(&list)
	if list.Servers[2].Connected {
		t.Error("GitHub connected with a stored TI that does not open")
	}
	if err := e.srv.Upstream().SaveToken(context.Background(), "alice", ghRoute, upstream.Token{AccessToken: "ti", Expiry: e.clock.now().Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	_ = json.NewDecoder(get("app.example.com", tok).Body).Decode(&list)
	if !list.Servers[2].Connected {
		t.Error("GitHub not connected after storing a TI")
	}
	// Expired and not refreshable: not connected; refreshable: connected.
	e.clock.add(2 * time.Minute)
	_ = json.NewDecoder(get("app.example.com", tok).Body).Decode(&list)
	if list.Servers[2].Connected {
		t.Error("GitHub connected with an expired TI without a refresh token")
	}
	if err := e.srv.Upstream().SaveToken(context.Background(), "alice", ghRoute, upstream.Token{AccessToken: "ti", RefreshToken: "rt", Expiry: e.clock.now().Add(-time.Minute)}); err != nil {
		t.Fatal(err)
	}
	_ = json.NewDecoder(get("app.example.com", tok).Body).Decode(&list)
	if !list.Servers[2].Connected {
		t.Error("GitHub not connected with an expired but refreshable TI")
	}

	for name, tc := range map[string]struct {
		host, token string
		want        int
		wwwAuth     string
	}{
		"no token":             {"app.example.com", "", 401, "Bearer"},
		"unknown token":        {"app.example.com", secret.NewToken(), 401, `Bearer error="invalid_token"`},
		"token for a server":   {"app.example.com", e.token(s, demoRoute, time.Hour), 401, `Bearer error="invalid_token"`},
		"not a client host":    {"mcp.example.com", tok, 404, ""},
		"authenticate host":    {"auth.example.com", tok, 404, ""},
		"plain route host":     {"plain.example.com", tok, 404, ""},
		"client route, client": {"app.example.com", e.token(s, appRoute, time.Hour), 200, ""},
	} {
		resp := get(tc.host, tc.token)
		if resp.StatusCode != tc.want || resp.Header.Get("WWW-Authenticate") != tc.wwwAuth {
			t.Errorf("%s: status %d WWW-Authenticate %q, want %d %q", name, resp.StatusCode, resp.Header.Get("WWW-Authenticate"), tc.want, tc.wwwAuth)
		}
	}
	// The session ending ends the listing too.
	if err := e.store.RevokeSession(context.Background(), s.ID, e.clock.now()); err != nil {
		t.Fatal(err)
	}
	if resp := get("app.example.com", tok); resp.StatusCode != 401 {
		t.Errorf("revoked session: status %d", resp.StatusCode)
	}
}

func TestServer_ServeBothListenersAndShutDown(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	pub, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	in, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.srv.Serve(ctx, pub, in) }()
	client := &http.Client{Timeout: 5 * time.Second}
	for _, addr := range []string{pub.Addr().String(), in.Addr().String()} {
		resp, err := client.Get("http://" + addr + paths.Health)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("health on %s: %v %v", addr, err, resp)
		}
		resp.Body.Close()
	}
	// The check API is not on the public listener.
	resp, err := client.Post("http://"+pub.Addr().String()+paths.Check, "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMisdirectedRequest && resp.StatusCode != http.StatusNotFound {
		t.Errorf("check API on the public listener: %d", resp.StatusCode)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Serve did not return after cancel")
	}
}

func TestServer_GCLoopDeletesExpiredRecords(t *testing.T) {
	t.Parallel()
	cfg, err := config.Parse([]byte(testConfigYAML), nil)
	if err != nil {
		t.Fatal(err)
	}
	e := newTestEnv(t)
	srv, err := New(context.Background(), cfg, WithStore(e.store), WithConnector(newIDP()), WithClock(e.clock.now),
		WithLogger(slog.New(slog.DiscardHandler)), WithGCInterval(10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := e.store.PutOneTime(ctx, store.OneTime{Hash: secret.Hash("x"), Kind: "k", ExpiresAt: e.clock.now().Add(time.Second)}); err != nil {
		t.Fatal(err)
	}
	e.clock.add(time.Minute)
	gcCtx, stop := context.WithTimeout(ctx, 200*time.Millisecond)
	defer stop()
	srv.RunGC(gcCtx)
	if n, err := e.store.DeleteExpired(ctx, e.clock.now()); err != nil || n != 0 {
		t.Errorf("after the GC loop DeleteExpired removed %d more rows (%v), want 0", n, err)
	}
}

func TestNew_OpensConfiguredSQLiteStore(t *testing.T) {
	t.Parallel()
	y := strings.Replace(testConfigYAML, "storage: {type: memory}", "storage: {type: sqlite, path: "+filepath.Join(t.TempDir(), "gw.db")+"}", 1)
	cfg, err := config.Parse([]byte(y), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(context.Background(), cfg, WithConnector(newIDP()), WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Store().CreateSession(context.Background(), store.Session{ID: "s1", Subject: "u", ExpiresAt: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestNew_UnsupportedProviderFails: a provider the gateway cannot sign in with (hosted) is
// refused by the configuration's validation (the key named, exit 2), and by New, as a
// configuration error, for a configuration that skipped it.
func TestNew_UnsupportedProviderFails(t *testing.T) {
	t.Parallel()
	y := strings.Replace(testConfigYAML, "idp_provider: oidc", "idp_provider: hosted", 1)
	if _, err := config.Parse([]byte(y), nil); err == nil || !strings.Contains(err.Error(), "idp_provider: the hosted authenticate service is not available") {
		t.Fatalf("config.Parse: err = %v", err)
	}
	cfg, err := config.Parse([]byte(testConfigYAML), nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.IDPProvider = "hosted"
	_, err = New(context.Background(), cfg, WithLogger(slog.New(slog.DiscardHandler)))
	var ce *config.Error
	if err == nil || !strings.Contains(err.Error(), "idp_provider: the hosted authenticate service is not available") || !errors.As(err, &ce) {
		t.Fatalf("err = %v, want a *config.Error", err)
	}
}
