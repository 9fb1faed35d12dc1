package host

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// These tests run the real filter (build/out/filter.wasm via GATEWAY_WASM, else ./filter
// built for the test) through the host. They check the host/filter contract: the module
// starts under cpp-host's rules, requests flow, callouts come back on the root context.

// filterConfig is a plugin configuration with one MCP server route on mcp.test.
func filterConfig(t testing.TB) []byte {
	t.Helper()
	cfg := map[string]any{
		"token_service_cluster":    "tokensvc",
		"token_service_authority":  "tokensvc.internal",
		"filter_key":               "test-filter-key",
		"check_timeout_ms":         2000,
		"cache_ttl_s":              60,
		"authenticate_service_url": "http://auth.test",
		"routes": []map[string]any{{
			"id": "http://mcp.test/", "name": "demo", "scheme": "http", "host": "mcp.test",
			"path_prefix": "/", "kind": "server",
			"policy": map[string]any{"allow": map[string]any{"and": []any{map[string]any{"accept": true}}}},
		}},
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkAPI is a stand-in for the token service's check endpoint.
type checkAPI struct {
	mu    sync.Mutex
	calls []map[string]any
	keys  []string
}

func (c *checkAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req map[string]any
	b, _ := io.ReadAll(r.Body)
	_ = json.Unmarshal(b, &req)
	c.mu.Lock()
	c.calls = append(c.calls, req)
	c.keys = append(c.keys, r.Header.Get("x-gateway-filter-key"))
	c.mu.Unlock()
	w.Header().Set("content-type", "application/json")
	if req["token"] != "good-token" {
		w.WriteHeader(401)
		io.WriteString(w, `{"status":"invalid_token"}`)
		return
	}
	io.WriteString(w, `{"status":"ok","identity":{"sub":"alice","email":"alice@example.com"},"assertion":"signed.jwt.value","expires_at":4102444800}`)
}

func newFilterHost(t *testing.T, opts Options) *Host {
	t.Helper()
	m, _ := realFilter(t)
	if opts.PluginConfig == nil {
		opts.PluginConfig = filterConfig(t)
	}
	h, err := New(context.Background(), m, opts)
	if err != nil {
		t.Fatalf("start the real filter: %v", err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

func TestRealFilter_ModuleShape(t *testing.T) {
	t.Parallel()
	m, wasm := realFilter(t)
	if m.ABI() != ABI021 {
		t.Errorf("ABI = %s, want 0.2.1", m.ABI())
	}
	t.Logf("%s: %d bytes, imports %v", filterPath, len(wasm), m.Imports())
	for _, name := range []string{"proxy_on_memory_allocate", "_initialize", "proxy_on_context_create", "proxy_on_request_headers", "proxy_on_http_call_response"} {
		if !m.Exports(name) {
			t.Errorf("filter does not export %s", name)
		}
	}
	if m.Exports("malloc") {
		t.Error("filter exports malloc: cpp-host would call it instead of proxy_on_memory_allocate")
	}
}

func TestRealFilter_ForeignHostPassesThrough(t *testing.T) {
	t.Parallel()
	h := newFilterHost(t, Options{Clusters: map[string]Cluster{"tokensvc": {Handler: &checkAPI{}}}})
	s := stream(t, h)
	ctx := testCtx(t)
	in := Headers{{":method", "GET"}, {":path", "/hello"}, {":authority", "elsewhere.test"}, {":scheme", "http"}}
	r, err := s.SendRequestHeaders(ctx, in, true)
	if err != nil || r.Reply != nil || !r.EndOfStream || r.Headers.Value(":path") != "/hello" {
		t.Fatalf("request: %+v, %v\n%s", r, err, dumpLogs(h))
	}
	r, err = s.SendResponseHeaders(ctx, Headers{{":status", "200"}}, false)
	if err != nil || r.Headers.Value(":status") != "200" {
		t.Fatalf("response headers: %+v, %v", r, err)
	}
	r, err = s.SendResponseBody(ctx, []byte("world"), true)
	if err != nil || string(r.Body) != "world" || !r.EndOfStream {
		t.Fatalf("response body: %+v, %v", r, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if failed, why := h.Failed(0); failed {
		t.Fatalf("VM failed: %v", why)
	}
}

func TestRealFilter_ToolCallThroughCallout(t *testing.T) {
	t.Parallel()
	api := &checkAPI{}
	h := newFilterHost(t, Options{Clusters: map[string]Cluster{"tokensvc": {Handler: api}}})
	s := stream(t, h)
	ctx := testCtx(t)
	body := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`)
	in := Headers{{":method", "POST"}, {":path", "/mcp"}, {":authority", "mcp.test"}, {":scheme", "http"},
		{"authorization", "Bearer good-token"}, {"content-type", "application/json"},
		{"x-gateway-assertion", "forged"}, {"x-request-id", "req-1"}}
	r, err := s.SendRequestHeaders(ctx, in, false)
	if err != nil || r.Reply != nil {
		t.Fatalf("request headers: %+v, %v\n%s", r, err, dumpLogs(h))
	}
	up := r.Headers
	r2, err := s.SendRequestBody(ctx, body, true)
	if err != nil || r2.Reply != nil || !r2.EndOfStream {
		t.Fatalf("request body: %+v, %v\n%s", r2, err, dumpLogs(h))
	}
	if up == nil {
		up = r2.Headers
	}
	if up.Has("authorization") || up.Value("x-gateway-assertion") != "signed.jwt.value" {
		t.Errorf("upstream headers = %v: want no Authorization and the signed assertion", up)
	}
	if string(r.Body)+string(r2.Body) != string(body) {
		t.Errorf("upstream body = %q", string(r.Body)+string(r2.Body))
	}
	e := waitLog(t, h, `"request-id":"req-1"`) // the filter's authorization log record
	if !strings.Contains(e.Message, `"allow":true`) || !strings.Contains(e.Message, `"user":"alice"`) {
		t.Errorf("authorization log: %s", e.Message)
	}
	api.mu.Lock()
	defer api.mu.Unlock()
	if len(api.calls) != 1 || api.keys[0] != "test-filter-key" || api.calls[0]["token"] != "good-token" {
		t.Errorf("check API saw %v with keys %v", api.calls, api.keys)
	}
}

func TestRealFilter_FailsClosed(t *testing.T) {
	t.Parallel()
	for name, opts := range map[string]Options{
		"no bearer token":             {Clusters: map[string]Cluster{"tokensvc": {Handler: &checkAPI{}}}},
		"token service unreachable":   {Clusters: map[string]Cluster{"tokensvc": {URL: "http://127.0.0.1:1"}}},
		"token service reset":         {Clusters: map[string]Cluster{"tokensvc": {URL: "http://127.0.0.1:1"}}, CallFailures: CallFailureReset},
		"token service not a cluster": {Clusters: map[string]Cluster{}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := newFilterHost(t, opts)
			in := Headers{{":method", "GET"}, {":path", "/mcp"}, {":authority", "mcp.test"}, {":scheme", "http"}}
			if name != "no bearer token" {
				in = append(in, Header{"authorization", "Bearer good-token"})
			}
			r, err := stream(t, h).SendRequestHeaders(testCtx(t), in, true)
			if err != nil || r.Reply == nil || r.Headers != nil {
				t.Fatalf("SendRequestHeaders = %+v, %v; want a local reply\n%s", r, err, dumpLogs(h))
			}
			want := 503
			if name == "no bearer token" {
				want = 401
			}
			if r.Reply.Status != want {
				t.Errorf("reply status = %d, want %d (%s)", r.Reply.Status, want, r.Reply.Body)
			}
			if failed, why := h.Failed(0); failed {
				t.Errorf("VM failed: %v", why)
			}
		})
	}
}

// TestRealFilter_LegacyEnvoy loads the filter the way an Envoy before cpp-host #533 would
// (fewer WASI functions, poll_oneoff ENOSYS and not allowed during _initialize): it must
// start and answer, without one scheduler call. The load under that host is
// wasmtest/filtertest's TestLegacyEnvoy_MixedLoadNeverCallsTheScheduler.
func TestRealFilter_LegacyEnvoy(t *testing.T) {
	t.Parallel()
	h := newFilterHost(t, Options{Compat: CompatLegacy, TraceSchedulerCalls: true,
		Clusters: map[string]Cluster{"tokensvc": {Handler: &checkAPI{}}}})
	ctx := testCtx(t)
	r, err := stream(t, h).SendRequestHeaders(ctx, Headers{{":method", "GET"}, {":path", "/"}, {":authority", "elsewhere.test"}, {":scheme", "http"}}, true)
	if err != nil || r.Reply != nil || !r.EndOfStream {
		t.Fatalf("pass-through: %+v, %v\n%s", r, err, dumpLogs(h))
	}
	r, err = stream(t, h).SendRequest(ctx, Headers{{":method", "POST"}, {":path", "/mcp"}, {":authority", "mcp.test"}, {":scheme", "http"},
		{"authorization", "Bearer good-token"}, {"content-type", "application/json"}}, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`))
	if err != nil || r.Reply != nil || r.Headers.Value("x-gateway-assertion") != "signed.jwt.value" {
		t.Fatalf("tools/call: %+v, %v\n%s", r, err, dumpLogs(h))
	}
	if failed, why := h.Failed(0); failed || len(WithoutStartProbe(h.SchedulerCalls(), 1)) != 0 {
		t.Fatalf("VM failed: %v; scheduler calls:\n%s", why, FormatSchedulerCalls(h.SchedulerCalls()))
	}
}

// TestRealFilter_BehindHandler runs the filter the way the local gateway does: an HTTP server
// whose handler is Host.Handler in front of the upstream.
func TestRealFilter_BehindHandler(t *testing.T) {
	t.Parallel()
	h := newFilterHost(t, Options{Clusters: map[string]Cluster{"tokensvc": {Handler: &checkAPI{}}}})
	var mu sync.Mutex
	var got *http.Request
	var gotBody string
	upstream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got, gotBody = r, string(b)
		mu.Unlock()
		w.Header().Set("content-type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	})
	srv := httptest.NewServer(h.Handler(upstream, nil))
	defer srv.Close()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{}}}`
	req, _ := http.NewRequest("POST", srv.URL+"/mcp", strings.NewReader(body))
	req.Host = "mcp.test"
	req.Header.Set("authorization", "Bearer good-token")
	req.Header.Set("content-type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rb, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(rb) != `{"jsonrpc":"2.0","id":1,"result":{}}` {
		t.Fatalf("response %d %s\n%s", resp.StatusCode, rb, dumpLogs(h))
	}
	mu.Lock()
	defer mu.Unlock()
	if got == nil || gotBody != body || got.Header.Get("authorization") != "" || got.Header.Get("x-gateway-assertion") != "signed.jwt.value" {
		t.Fatalf("upstream saw %v body %q", got, gotBody)
	}
	// Without a token the client gets the filter's 401 and the upstream nothing.
	got = nil
	mu.Unlock()
	req, _ = http.NewRequest("POST", srv.URL+"/mcp", strings.NewReader(body))
	req.Host = "mcp.test"
	req.Header.Set("content-type", "application/json")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	mu.Lock()
	if resp.StatusCode != 401 || got != nil || resp.Header.Get("www-authenticate") == "" {
		t.Fatalf("unauthenticated: %d %v, upstream called: %v", resp.StatusCode, resp.Header, got != nil)
	}
}
