package plugin_test

import (
	"strings"
	"testing"

	"github.com/mcpmesh/gateway/filter/plugin"
	"github.com/mcpmesh/gateway/filter/plugin/plugintest"
)

// TestScenarios_Native runs the behaviour cases that are not attacks against the filter's Go
// logic, in every Envoy mode; wasmtest/filtertest runs them against filter.wasm.
func TestScenarios_Native(t *testing.T) {
	t.Parallel()
	plugintest.RunAll(t, plugintest.Native, plugintest.Scenarios())
}

func TestCache_SecondRequestWithSameTokenMakesNoCallout(t *testing.T) {
	t.Parallel()
	nf, err := plugintest.NewNativeFilter()
	if err != nil {
		t.Fatal(err)
	}
	allowed := plugintest.AllowedToolCall()
	first := nf.Run(allowed)
	second := nf.Run(allowed)
	if first.CheckCalls != 1 || second.CheckCalls != 0 || !second.Forwarded {
		t.Fatalf("calls %d then %d (forwarded %v), want 1 then 0 and forwarded", first.CheckCalls, second.CheckCalls, second.Forwarded)
	}
	// The cache is keyed by route too: the same token on another route calls out again.
	other := allowed
	other.Authority = "pitfall.example.com"
	if r := nf.Run(other); r.CheckCalls != 1 {
		t.Fatalf("other route: calls = %d, want 1", r.CheckCalls)
	}
	// After the TTL the bundle is fetched again.
	nf.Host.Clock = nf.Host.Clock.Add(31e9)
	if r := nf.Run(allowed); r.CheckCalls != 1 {
		t.Fatalf("after TTL: calls = %d, want 1", r.CheckCalls)
	}
	if nf.Host.Counters["mcp_gateway_cache_hit"] != 1 {
		t.Fatalf("cache hits = %d, want 1", nf.Host.Counters["mcp_gateway_cache_hit"])
	}
}

func TestConfigure_BadPolicyNamesTheRoute(t *testing.T) {
	t.Parallel()
	f := plugin.New(plugintest.NewNativeHost())
	cfg := strings.Replace(string(plugintest.Config()), `"not_in"`, `"regex"`, 1)
	err := f.Configure([]byte(cfg))
	if err == nil || !strings.Contains(err.Error(), "routes[0].policy") || !strings.Contains(err.Error(), "regex") {
		t.Fatalf("err = %v", err)
	}
	if err := f.Configure([]byte(`{`)); err == nil {
		t.Fatal("malformed JSON accepted")
	}
}

func TestMetrics_CountDecisionsAndReasons(t *testing.T) {
	t.Parallel()
	nf, _ := plugintest.NewNativeFilter()
	nf.Run(plugintest.DeniedToolCall())
	nf.Run(plugintest.AllowedToolCall())
	for name, want := range map[string]int64{
		"mcp_gateway_authorize_denied":                                        1,
		"mcp_gateway_authorize_allowed":                                       1,
		"mcp_gateway_deny_reason_mcp_tool_unauthorized":                       1,
		"mcp_gateway.route.mcp_example_com.authorize_denied":                  1,
		"mcp_gateway.route.mcp_example_com.authorize_allowed":                 1,
		"mcp_gateway.route.mcp_example_com.deny_reason.mcp_tool_unauthorized": 1,
	} {
		if got := nf.Host.Counters[name]; got != want {
			t.Errorf("%s = %d, want %d; counters %v", name, got, want, nf.Host.Counters)
		}
	}
}

// TestMetrics_RouteStatNames: a route's counters carry its name with nothing but a-z, 0-9 and
// _ in it (no dot: Envoy's tag extraction splits there), or its host and path without one.
func TestMetrics_RouteStatNames(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, host, path, want string
	}{
		{"Demo MCP server", "mcp.example.com", "/mcp", "mcp_gateway.route.demo_mcp_server."},
		{"", "mcp.example.com:8443", "/tools/v1", "mcp_gateway.route.mcp_example_com_8443_tools_v1."},
		{"Ümlaut.Route", "h", "/", "mcp_gateway.route.__mlaut_route."},
	} {
		if got := plugin.RouteStatPrefix(tt.name, tt.host, tt.path); got != tt.want {
			t.Errorf("RouteStatPrefix(%q, %q, %q) = %q, want %q", tt.name, tt.host, tt.path, got, tt.want)
		}
	}
}

func TestDecide_RecordOnlyWhenTheProxyLogsInfo(t *testing.T) {
	t.Parallel()
	req := plugintest.BenchRequests()["ToolsCall1KiB"]
	for _, tt := range []struct {
		level   plugin.LogLevel
		records int
	}{{plugin.LogDebug, 1}, {plugin.LogInfo, 1}, {plugin.LogWarn, 0}, {plugin.LogCritical, 0}} {
		nf, err := plugintest.NewNativeFilter()
		if err != nil {
			t.Fatal(err)
		}
		nf.Host.Level = tt.level
		r := nf.Run(req)
		records := 0
		for _, l := range r.Logs {
			if strings.Contains(l, `"message":"authorize check"`) {
				records++
			}
		}
		if !r.Forwarded || records != tt.records {
			t.Errorf("level %d: forwarded %v, %d records %q; want %d", tt.level, r.Forwarded, records, r.Logs, tt.records)
		}
	}
}
