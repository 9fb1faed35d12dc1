package abi_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/tetratelabs/wazero"

	"github.com/mcpmesh/gateway/filter/internal/abi"
	"github.com/mcpmesh/gateway/filter/plugin"
)

const (
	actionContinue = 0
	actionPause    = 1
)

// startGuest runs the test guest up to a configured root context 1.
func startGuest(t *testing.T) *testHost {
	t.Helper()
	h := newTestHost(t, guestModule(t), true)
	h.rootID = 1
	h.current = 1
	h.call("proxy_on_context_create", 1, 0)
	if got := h.call("proxy_on_vm_start", 1, 0); got != 1 {
		t.Fatalf("proxy_on_vm_start = %d", got)
	}
	h.config = []byte("guest-config")
	if got := h.call("proxy_on_configure", 1, uint64(len(h.config))); got != 1 {
		t.Fatalf("proxy_on_configure = %d; logs %v", got, h.logs)
	}
	if !h.hasLog(plugin.LogInfo, "configured") {
		t.Fatalf("logs = %v", h.logs)
	}
	return h
}

// newStream creates stream context id with the given request headers.
func (h *testHost) newStream(id uint32, hs ...plugin.Header) {
	h.setHeaders(id, abi.MapHTTPRequestHeaders, hs...)
	h.current = 1
	h.call("proxy_on_context_create", uint64(id), 1)
}

func TestModule_HeadersPropertiesAndMetricsUnderGCStress(t *testing.T) {
	h := startGuest(t)
	h.props["request\x00id"] = []byte("req-42")
	h.newStream(2,
		plugin.Header{Name: ":path", Value: "/headers"},
		plugin.Header{Name: "x-echo", Value: "hello"},
		plugin.Header{Name: "x-remove", Value: "secret"},
	)
	if got := h.onStream("proxy_on_request_headers", 2, 3, 0); got != actionContinue {
		t.Fatalf("proxy_on_request_headers = %d; local %+v; logs %v", got, h.local, h.logs)
	}
	want := map[string]string{"x-echo-out": "hello!", "x-seen": "3", "x-request-id-prop": "req-42"}
	for name, v := range want {
		if got, _ := h.header(2, abi.MapHTTPRequestHeaders, name); got != v {
			t.Errorf("request header %s = %q, want %q", name, got, v)
		}
	}
	if _, found := h.header(2, abi.MapHTTPRequestHeaders, "x-remove"); found {
		t.Error("x-remove still present")
	}
	if got := h.counters[h.metrics["guest_requests_total"]]; got != 1 {
		t.Errorf("counter = %d, want 1", got)
	}
	if got := h.onStream("proxy_on_response_headers", 2, 1, 0); got != actionContinue {
		t.Fatalf("proxy_on_response_headers = %d", got)
	}
	if v, _ := h.header(2, abi.MapHTTPResponseHeaders, "x-guest"); v != "1" {
		t.Error("response header not set")
	}
	h.onStream("proxy_on_log", 2)
	if got := h.onStream("proxy_on_done", 2); got != 1 {
		t.Fatalf("proxy_on_done = %d", got)
	}
	h.onStream("proxy_on_delete", 2)
	if !h.hasLog(plugin.LogDebug, "done /headers") {
		t.Fatalf("OnDone did not run: %v", h.logs)
	}
}

func TestModule_HTTPCallResponseRunsOnTheStream(t *testing.T) {
	h := startGuest(t)
	h.newStream(3, plugin.Header{Name: ":path", Value: "/call"})
	if got := h.onStream("proxy_on_request_headers", 3, 1, 0); got != actionPause {
		t.Fatalf("proxy_on_request_headers = %d", got)
	}
	if len(h.calls) != 1 {
		t.Fatalf("calls = %+v", h.calls)
	}
	c := h.calls[0]
	wantHeaders := []plugin.Header{{Name: ":method", Value: "POST"}, {Name: ":path", Value: "/check"}, {Name: ":authority", Value: "authz"}}
	if c.cluster != "authz" || c.body != "ping" || c.timeout != 500 || !reflect.DeepEqual(c.headers, wantHeaders) {
		t.Fatalf("call = %+v", c)
	}
	h.callResp = &struct {
		headers []plugin.Header
		body    []byte
	}{[]plugin.Header{{Name: ":status", Value: "200"}, {Name: "content-type", Value: "application/json"}}, []byte(`{"ok":true}`)}
	h.current = 1 // responses arrive on the root context
	h.call("proxy_on_http_call_response", 1, uint64(c.id), 2, 11, 0)
	if !reflect.DeepEqual(h.effectiveSets, []uint32{3}) {
		t.Fatalf("effective contexts set = %v, want [3]", h.effectiveSets)
	}
	if v, _ := h.header(3, abi.MapHTTPRequestHeaders, "x-call-body"); v != `{"ok":true}` {
		t.Fatalf("x-call-body = %q; logs %v", v, h.logs)
	}
	if v, _ := h.header(3, abi.MapHTTPRequestHeaders, "x-call-status"); v != "200" {
		t.Fatalf("x-call-status = %q", v)
	}
	if !reflect.DeepEqual(h.continued, []continued{{3, uint32(abi.StreamHTTPRequest)}}) {
		t.Fatalf("continued = %+v", h.continued)
	}
}

func TestModule_HTTPCallFailureAndDeletedStream(t *testing.T) {
	h := startGuest(t)
	h.newStream(4, plugin.Header{Name: ":path", Value: "/call"})
	h.onStream("proxy_on_request_headers", 4, 1, 0)
	h.newStream(5, plugin.Header{Name: ":path", Value: "/call"})
	h.onStream("proxy_on_request_headers", 5, 1, 0)

	h.current = 1
	h.call("proxy_on_http_call_response", 1, uint64(h.calls[0].id), 0, 0, 0)
	if got := h.local[4]; got.status != 503 || !reflect.DeepEqual(got.headers, []plugin.Header{{Name: "x-reason", Value: "callout failed"}}) {
		t.Fatalf("local response of stream 4 = %+v", got)
	}

	h.onStream("proxy_on_done", 5)
	h.onStream("proxy_on_delete", 5)
	h.current = 1
	h.call("proxy_on_http_call_response", 1, uint64(h.calls[1].id), 0, 0, 0)
	if _, answered := h.local[5]; answered || slices.Contains(h.effectiveSets, 5) {
		t.Fatalf("deleted stream 5 was touched: local %+v, effective %v", h.local, h.effectiveSets)
	}
}

func TestModule_PanicFailsClosedAndVMStaysUp(t *testing.T) {
	h := startGuest(t)
	h.newStream(6, plugin.Header{Name: ":path", Value: "/panic"})
	if got := h.onStream("proxy_on_request_headers", 6, 1, 0); got != actionPause {
		t.Fatalf("proxy_on_request_headers = %d", got)
	}
	if h.local[6].status != 500 {
		t.Fatalf("local = %+v", h.local)
	}
	if !h.hasLog(plugin.LogCritical, "guest panic on purpose") {
		t.Fatalf("no critical log: %v", h.logs)
	}
	h.newStream(7, plugin.Header{Name: ":path", Value: "/headers"})
	if got := h.onStream("proxy_on_request_headers", 7, 1, 0); got != actionContinue {
		t.Fatalf("next stream: proxy_on_request_headers = %d", got)
	}
}

func TestModule_RequestBodyIsReadFromTheHost(t *testing.T) {
	h := startGuest(t)
	h.newStream(8, plugin.Header{Name: ":path", Value: "/body"})
	h.onStream("proxy_on_request_headers", 8, 1, 0)
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call"}`)
	h.setBuffer(8, abi.BufferHTTPRequestBody, body[:10])
	if got := h.onStream("proxy_on_request_body", 8, 10, 0); got != actionPause {
		t.Fatalf("partial body = %d, want Pause", got)
	}
	h.setBuffer(8, abi.BufferHTTPRequestBody, body)
	h.onStream("proxy_on_request_body", 8, uint64(len(body)), 1)
	got := h.local[8]
	if got.status != 200 || got.body != string(body) || got.headers[0].Value != "46" {
		t.Fatalf("local = %+v", got)
	}
}

func TestModule_ConfigureErrorIsLoggedAndRefused(t *testing.T) {
	h := startGuest(t)
	h.call("proxy_on_context_create", 20, 0)
	h.config = []byte("bad")
	if got := h.call("proxy_on_configure", 20, 3); got != 0 {
		t.Fatalf("proxy_on_configure = %d, want 0", got)
	}
	if !h.hasLog(plugin.LogError, `unexpected configuration "bad"`) {
		t.Fatalf("logs = %v", h.logs)
	}
}

func TestModule_AllocatorRefusesHugeRequests(t *testing.T) {
	h := startGuest(t)
	if got := h.call("proxy_on_memory_allocate", 0xffffffff); got != 0 {
		t.Fatalf("proxy_on_memory_allocate(4 GiB) = %#x, want 0", got)
	}
	if got := h.call("proxy_on_memory_allocate", 16); got == 0 {
		t.Fatal("proxy_on_memory_allocate(16) failed")
	}
}

// filterModule returns the filter module named by GATEWAY_WASM, or builds ./filter.
func filterModule(t *testing.T) []byte {
	t.Helper()
	path := os.Getenv("GATEWAY_WASM")
	if path == "" {
		if testing.Short() {
			t.Skip("building filter.wasm is skipped in -short mode; set GATEWAY_WASM")
		}
		path = filepath.Join(t.TempDir(), "filter.wasm")
		if err := buildWasm(path, "github.com/mcpmesh/gateway/filter"); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read filter module: %v", err)
	}
	return b
}

func TestFilterModule_ExportsAndImports(t *testing.T) {
	bin := filterModule(t)
	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer r.Close(ctx)
	compiled, err := r.CompileModule(ctx, bin)
	if err != nil {
		t.Fatalf("compile filter module: %v", err)
	}
	exports := compiled.ExportedFunctions()
	for _, name := range []string{
		"proxy_abi_version_0_2_1", "_initialize", "proxy_on_memory_allocate", "proxy_on_context_create",
		"proxy_on_vm_start", "proxy_on_configure", "proxy_on_tick",
		"proxy_on_request_headers", "proxy_on_request_body", "proxy_on_request_trailers",
		"proxy_on_response_headers", "proxy_on_response_body", "proxy_on_response_trailers",
		"proxy_on_http_call_response", "proxy_on_queue_ready", "proxy_on_log", "proxy_on_done", "proxy_on_delete",
	} {
		if _, found := exports[name]; !found {
			t.Errorf("filter module does not export %s", name)
		}
	}
	for _, name := range []string{"malloc", "_start", "proxy_abi_version_0_2_0", "proxy_abi_version_0_1_0"} {
		if _, found := exports[name]; found {
			t.Errorf("filter module must not export %s", name)
		}
	}
	for _, def := range compiled.ImportedFunctions() {
		module, name, _ := def.Import()
		if module != "env" && module != "wasi_snapshot_preview1" {
			t.Errorf("import %s.%s from an unexpected module", module, name)
		}
	}
}

func TestFilterModule_StartsAndFailsClosedWithoutConfiguration(t *testing.T) {
	h := newTestHost(t, filterModule(t), false)
	h.rootID = 1
	h.current = 1
	h.call("proxy_on_context_create", 1, 0)
	if got := h.call("proxy_on_vm_start", 1, 0); got != 1 {
		t.Fatalf("proxy_on_vm_start = %d", got)
	}
	h.config = []byte("this is not JSON")
	if got := h.call("proxy_on_configure", 1, uint64(len(h.config))); got != 0 {
		t.Fatalf("proxy_on_configure(garbage) = %d, want 0", got)
	}
	if !h.hasLog(plugin.LogError, "configure plugin") {
		t.Fatalf("configuration error not logged: %v", h.logs)
	}
	h.newStream(2, plugin.Header{Name: ":path", Value: "/mcp"}, plugin.Header{Name: ":authority", Value: "mcp.example.com"})
	if got := h.onStream("proxy_on_request_headers", 2, 2, 0); got != actionPause {
		t.Fatalf("proxy_on_request_headers = %d, want Pause", got)
	}
	if h.local[2].status != 500 {
		t.Fatalf("unconfigured filter must answer 500, got %+v", h.local)
	}
}
