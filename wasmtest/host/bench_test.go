package host

import (
	"context"
	"testing"
)

// Benchmarks of the host running the real filter. Figures go to BENCHMARKS.md
// ("Host and pass-through").

func BenchmarkCompile(b *testing.B) {
	_, wasm := realFilter(b)
	for _, interp := range []bool{false, true} {
		name := "compiler"
		if interp {
			name = "interpreter"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				m, err := Compile(context.Background(), wasm, &CompileOptions{Interpreter: interp})
				if err != nil {
					b.Fatal(err)
				}
				m.Close(context.Background())
			}
			b.ReportMetric(float64(len(wasm)), "wasm-bytes")
		})
	}
}

// BenchmarkInstantiate measures a new VM: instantiation, _initialize, context creation,
// proxy_on_vm_start and proxy_on_configure with the real plugin configuration.
func BenchmarkInstantiate(b *testing.B) {
	m, wasm := realFilter(b)
	b.ReportAllocs()
	cfg := filterConfig(b)
	for b.Loop() {
		h, err := New(context.Background(), m, Options{PluginConfig: cfg})
		if err != nil {
			b.Fatal(err)
		}
		h.Close()
	}
	b.ReportMetric(float64(len(wasm)), "wasm-bytes")
}

// BenchmarkPassThrough is one request and its response through the real filter for a host
// it does not guard: stream creation, request headers, response headers and body, teardown.
func BenchmarkPassThrough(b *testing.B) {
	m, wasm := realFilter(b)
	h, err := New(context.Background(), m, Options{PluginConfig: filterConfig(b), LogLevel: LogInfo})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	ctx := context.Background()
	req := Headers{{":method", "GET"}, {":path", "/hello"}, {":authority", "elsewhere.test"}, {":scheme", "http"},
		{"user-agent", "bench"}, {"accept", "*/*"}, {"x-request-id", "bench-id"}}
	resp := Headers{{":status", "200"}, {"content-type", "text/plain"}, {"content-length", "5"}}
	body := []byte("hello")
	b.ReportAllocs()
	for b.Loop() {
		s, err := h.NewStream(ctx, StreamInfo{})
		if err != nil {
			b.Fatal(err)
		}
		if r, err := s.SendRequestHeaders(ctx, req, true); err != nil || r.Reply != nil {
			b.Fatalf("%+v %v", r, err)
		}
		s.SendResponseHeaders(ctx, resp, false)
		s.SendResponseBody(ctx, body, true)
		s.Close()
	}
	b.ReportMetric(float64(len(wasm)), "wasm-bytes")
}

// BenchmarkToolCallCached is an authorized MCP tools/call whose decision bundle is cached
// (no callout): route match, bearer token, body buffering, JSON-RPC parsing, policy, header
// rewrite, authorization log, plus the response.
func BenchmarkToolCallCached(b *testing.B) {
	m, _ := realFilter(b)
	h, err := New(context.Background(), m, Options{PluginConfig: filterConfig(b), LogLevel: LogInfo,
		Clusters: map[string]Cluster{"tokensvc": {Handler: &checkAPI{}}}})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	ctx := context.Background()
	req := Headers{{":method", "POST"}, {":path", "/mcp"}, {":authority", "mcp.test"}, {":scheme", "http"},
		{"authorization", "Bearer good-token"}, {"content-type", "application/json"}, {"x-request-id", "bench-id"}}
	body := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`)
	resp := Headers{{":status", "200"}, {"content-type", "application/json"}}
	respBody := []byte(`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hi"}]}}`)
	run := func() {
		s, err := h.NewStream(ctx, StreamInfo{})
		if err != nil {
			b.Fatal(err)
		}
		if r, err := s.SendRequestHeaders(ctx, req, false); err != nil || r.Reply != nil {
			b.Fatalf("%+v %v", r, err)
		}
		if r, err := s.SendRequestBody(ctx, body, true); err != nil || r.Reply != nil || !r.EndOfStream {
			b.Fatalf("%+v %v", r, err)
		}
		s.SendResponseHeaders(ctx, resp, false)
		s.SendResponseBody(ctx, respBody, true)
		s.Close()
	}
	run() // fills the bundle cache
	h.ResetLogs()
	b.ReportAllocs()
	for b.Loop() {
		run()
	}
	if m, _ := h.Metric("mcp_gateway_cache_miss"); m.Value > 1 {
		b.Logf("cache misses: %d", m.Value)
	}
}
