package gateway

import (
	"os"
	"strings"
	"testing"

	"github.com/mcpmesh/gateway/wasmtest/host"
)

// TestWritePrometheus_RouteAndReasonBecomeLabels: the filter's per-route counters come out as
// Envoy's Prometheus endpoint shows them once the documented stats_tags extract the route and
// the reason.
func TestWritePrometheus_RouteAndReasonBecomeLabels(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	err := WritePrometheus(&b, []Metric{
		{Name: "mcp_gateway.route.demo_mcp_server.authorize_denied", Type: host.Counter, Value: 2},
		{Name: "mcp_gateway.route.other.authorize_denied", Type: host.Counter, Value: 5},
		{Name: "mcp_gateway.route.demo_mcp_server.deny_reason.mcp_tool_unauthorized", Type: host.Counter, Value: 1},
		{Name: "mcp_gateway_authorize_denied", Type: host.Counter, Value: 7},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `# TYPE envoy_wasmcustom_mcp_gateway_authorize_denied counter
envoy_wasmcustom_mcp_gateway_authorize_denied 7
# TYPE envoy_wasmcustom_mcp_gateway_route_authorize_denied counter
envoy_wasmcustom_mcp_gateway_route_authorize_denied{mcp_route="demo_mcp_server"} 2
envoy_wasmcustom_mcp_gateway_route_authorize_denied{mcp_route="other"} 5
# TYPE envoy_wasmcustom_mcp_gateway_route_deny_reason counter
envoy_wasmcustom_mcp_gateway_route_deny_reason{mcp_route="demo_mcp_server",mcp_reason="mcp_tool_unauthorized"} 1
`
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}

// TestFilterStatsTags_AreTheDocumentedOnes: the rules the local gateway applies are those
// docs/operations-records.md gives operators for Envoy.
func TestFilterStatsTags_AreTheDocumentedOnes(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/operations-records.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, tag := range FilterStatsTags() {
		line := "- tag_name: " + tag.Name + "\n    regex: '" + tag.Regex.String() + "'"
		if !strings.Contains(string(doc), line) {
			t.Errorf("docs/operations-records.md lacks\n%s", line)
		}
	}
}
