package abi

import (
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/mcpmesh/gateway/filter/plugin"
)

// streamHostOn returns the StreamHost of a fresh stream context 2 of a configured VM.
func streamHostOn(t *testing.T) (*StreamHost, *fakeHost) {
	t.Helper()
	root := &testRoot{}
	v, h := newTestVM(t, root)
	v.contextCreate(2, 1)
	return root.streams[0].h.(*StreamHost), h
}

func TestStreamHost_HeadersAndBody(t *testing.T) {
	t.Parallel()
	sh, h := streamHostOn(t)
	h.maps[MapHTTPRequestHeaders] = []plugin.Header{{Name: ":path", Value: "/mcp"}, {Name: "authorization", Value: "Bearer te"}}
	if v, ok := sh.RequestHeader(":path"); !ok || v != "/mcp" {
		t.Fatalf("RequestHeader(:path) = %q, %v", v, ok)
	}
	if _, ok := sh.RequestHeader("x-missing"); ok {
		t.Fatal("missing header reported present")
	}
	if got := sh.RequestHeaders(); len(got) != 2 {
		t.Fatalf("RequestHeaders = %q", got)
	}
	sh.RemoveRequestHeader("authorization")
	sh.SetRequestHeader("x-gateway-assertion", "jwt")
	want := []plugin.Header{{Name: ":path", Value: "/mcp"}, {Name: "x-gateway-assertion", Value: "jwt"}}
	if got := h.maps[MapHTTPRequestHeaders]; !reflect.DeepEqual(got, want) {
		t.Fatalf("request headers = %q, want %q", got, want)
	}
	sh.SetResponseHeader("x-resp", "v")
	if v, _ := h.header(MapHTTPResponseHeaders, "x-resp"); v != "v" {
		t.Fatal("response header not set")
	}
	h.maps[MapHTTPResponseHeaders] = append(h.maps[MapHTTPResponseHeaders], plugin.Header{Name: ":status", Value: "200"})
	if got := sh.ResponseHeaders(); len(got) != 2 {
		t.Fatalf("ResponseHeaders = %q", got)
	}
	h.buffers[BufferHTTPRequestBody] = []byte(`{"jsonrpc":"2.0"}`)
	if got := string(sh.RequestBody(8)); got != `{"jsonrp` {
		t.Fatalf("RequestBody(8) = %q", got)
	}
	if got := sh.RequestBody(0); got != nil {
		t.Fatalf("RequestBody(0) = %q", got)
	}
	h.rawMaps[MapHTTPRequestHeaders] = []byte{1, 2, 3, 4, 5}
	if got := sh.RequestHeaders(); got != nil || !h.hasLog(plugin.LogError, "malformed proxy-wasm header map") {
		t.Fatalf("malformed map: %q, logs %v", got, h.logs)
	}
}

// The first read of the request headers is stored in the stream context; a later read must
// not change the slice handed out before, whatever the headers have become, and a map longer
// than the context's storage is read whole.
func TestStreamHost_RequestHeadersNeverAliasEarlierReads(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, streamHeaders, streamHeaders + 1} {
		sh, h := streamHostOn(t)
		var hs []plugin.Header
		for i := range n {
			hs = append(hs, plugin.Header{Name: "x-h" + strconv.Itoa(i), Value: "first"})
		}
		h.maps[MapHTTPRequestHeaders] = hs
		first := sh.RequestHeaders()
		want := slices.Clone(first)
		if !reflect.DeepEqual(first, hs) {
			t.Fatalf("%d headers: first read %q", n, first)
		}
		h.maps[MapHTTPRequestHeaders] = []plugin.Header{{Name: "x-other", Value: "second"}}
		if second := sh.RequestHeaders(); len(second) != 1 || second[0].Value != "second" {
			t.Fatalf("%d headers: second read %q", n, second)
		}
		if !reflect.DeepEqual(first, want) {
			t.Fatalf("%d headers: first read changed to %q", n, first)
		}
	}
}

func TestStreamHost_PropertyPathIsNULJoined(t *testing.T) {
	t.Parallel()
	sh, h := streamHostOn(t)
	h.props["source\x00address"] = []byte("10.0.0.1:5000")
	if v, ok := sh.Property("source", "address"); !ok || string(v) != "10.0.0.1:5000" {
		t.Fatalf("Property = %q, %v", v, ok)
	}
	if _, ok := sh.Property("request", "id"); ok {
		t.Fatal("missing property reported present")
	}
}

func TestStreamHost_SendLocalResponseClampsStatus(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want int }{{403, 403}, {99, 500}, {600, 500}, {-1, 500}} {
		sh, h := streamHostOn(t)
		sh.SendLocalResponse(tt.in, nil, nil)
		if len(h.local) != 1 || int(h.local[0].status) != tt.want {
			t.Errorf("SendLocalResponse(%d): local = %+v, want status %d", tt.in, h.local, tt.want)
		}
	}
}

func TestStreamHost_RefusedLocalResponseResetsStream(t *testing.T) {
	t.Parallel()
	sh, h := streamHostOn(t)
	h.fail["sendLocalResponse"] = StatusBadArgument
	sh.SendLocalResponse(403, nil, nil)
	if !reflect.DeepEqual(h.closed, []StreamType{StreamHTTPResponse}) {
		t.Fatalf("closed = %v, want a reset", h.closed)
	}
}

func TestRootHost_CountersAndLog(t *testing.T) {
	t.Parallel()
	sh, h := streamHostOn(t)
	id, err := sh.DefineCounter("gateway_requests_total")
	if err != nil {
		t.Fatal(err)
	}
	if h.metricTypes[id] != MetricCounter {
		t.Fatalf("metric type = %d, want counter", h.metricTypes[id])
	}
	sh.IncrementCounter(id, 2)
	sh.IncrementCounter(id, 3)
	if v := h.counters[id]; v != 5 {
		t.Fatalf("counter = %d, want 5", v)
	}
	sh.Log(plugin.LogWarn, "hello")
	if !h.hasLog(plugin.LogWarn, "hello") {
		t.Fatal("Log did not reach the host")
	}
	if sh.LogLevel() != plugin.LogDebug {
		t.Fatalf("LogLevel = %d", sh.LogLevel())
	}
	h.fail["getLogLevel"] = StatusUnimplemented
	if sh.LogLevel() != plugin.LogInfo {
		t.Fatal("LogLevel fallback must be info")
	}
}

func TestStatus_ErrorNames(t *testing.T) {
	t.Parallel()
	if got := StatusCASMismatch.Error(); got != "proxy-wasm status CAS_MISMATCH" {
		t.Fatalf("Error = %q", got)
	}
	if got := Status(99).String(); got != "status 99" {
		t.Fatalf("String = %q", got)
	}
	if StatusOK.err() != nil || StatusEmpty.err() == nil {
		t.Fatal("err() mapping wrong")
	}
}
