package filtertest

import (
	"context"
	"testing"

	"github.com/mcpmesh/gateway/filter/plugin/plugintest"
	"github.com/mcpmesh/gateway/wasmtest/host"
	"github.com/mcpmesh/gateway/wasmtest/wasmbuild"
)

// floorModules are the floor modules of wasmtest/floor, least work first.
var floorModules = []string{"none", "empty", "reads", "mcp"}

// BenchmarkFloor_Wasm is BenchmarkRequest_Wasm's stream — the same host options, driver and
// checks, BENCH_LOG_INFO and BENCH_COLD included — through each floor module of
// wasmtest/floor instead of filter.wasm: what the least work of a proxy-wasm MCP filter in
// standard Go costs in the same host, for the requests ToolsCall1KiB and PassThrough. Every
// iteration must end with the request forwarded upstream, as the first run did.
func BenchmarkFloor_Wasm(b *testing.B) {
	reqs := plugintest.BenchRequests()
	cases := map[string]plugintest.Case{}
	for _, name := range []string{"ToolsCall1KiB", "PassThrough"} {
		cases[name] = plugintest.Case{Request: reqs[name]}
	}
	for _, mod := range floorModules {
		b.Run(mod, func(b *testing.B) {
			benchStreams(b, wasmbuild.FloorModule(b, mod), cases, true)
		})
	}
}

// TestFloorModules sends one stream through each floor module, with the host options of the
// benchmarks, and checks what it did: every module forwards the allowed call and the pass-
// through untouched; reads and mcp set their properties; mcp refuses a tool outside its
// allow set and a body that is not JSON-RPC. It keeps the instruments from rotting.
func TestFloorModules(t *testing.T) {
	reqs := plugintest.BenchRequests()
	call, pass, denied := reqs["ToolsCall1KiB"], reqs["PassThrough"], reqs["DeniedCall"]
	bad := call
	bad.Chunks = []string{`{"jsonrpc":"2.0","id":1,"method":`}
	type want struct {
		status int               // 0: forwarded
		props  map[string]string // properties that must be set, "" for any value
	}
	for _, tc := range []struct {
		module, name string
		req          plugintest.Request
		want         want
	}{
		{"none", "call", call, want{}},
		{"none", "pass", pass, want{}},
		{"empty", "call", call, want{}},
		{"empty", "pass", pass, want{}},
		{"empty", "denied", denied, want{}},
		{"reads", "call", call, want{props: map[string]string{"floor.request_bytes": "1024"}}},
		{"reads", "pass", pass, want{props: map[string]string{"floor.request_bytes": ""}}},
		{"mcp", "call", call, want{props: map[string]string{
			"mcp_gateway.mcp_method": "tools/call", "mcp_gateway.mcp_tool": "echo", "mcp_gateway.allow": "true",
			"mcp_gateway.reasons": "tool_allowed", "mcp_gateway.user": "floor-user", "mcp_gateway.request_id": plugintest.RequestID,
		}}},
		{"mcp", "pass", pass, want{props: map[string]string{"floor.request_bytes": ""}}},
		{"mcp", "denied", denied, want{status: 403}},
		{"mcp", "unparsable", bad, want{status: 400}},
	} {
		t.Run(tc.module+"/"+tc.name, func(t *testing.T) {
			ctx := context.Background()
			check := &CheckServer{}
			h, err := NewHost(ctx, wasmbuild.FloorModule(t, tc.module), check, func(o *host.Options) { o.LogLevel = host.LogWarn })
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			r, err := Run(ctx, h, check, tc.req)
			if err != nil || r.Stuck {
				t.Fatalf("err %v, stuck %v", err, r.Stuck)
			}
			if tc.want.status != 0 {
				if r.Status != tc.want.status || r.Forwarded {
					t.Fatalf("status %d, forwarded %v; want %d, not forwarded", r.Status, r.Forwarded, tc.want.status)
				}
				return
			}
			if r.Status != 0 || !r.Forwarded {
				t.Fatalf("status %d, forwarded %v; want forwarded", r.Status, r.Forwarded)
			}
			if len(r.Properties) != len(tc.want.props) {
				t.Errorf("properties %v, want %v", r.Properties, tc.want.props)
			}
			for k, v := range tc.want.props {
				if got, ok := r.Properties[k]; !ok || (v != "" && got != v) {
					t.Errorf("property %s = %q (set %v), want %q", k, got, ok, v)
				}
			}
			if r.CheckCalls != 0 {
				t.Errorf("%d check calls, want 0", r.CheckCalls)
			}
		})
	}
}
