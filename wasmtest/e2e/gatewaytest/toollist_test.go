package gatewaytest

import (
	"slices"
	"strings"
	"testing"

	"github.com/mcpmesh/gateway/wasmtest/e2e/harness"
	"github.com/mcpmesh/gateway/wasmtest/host"
)

// restrictedShadow is the policy_shadow of the restricted route under
// stackOptions.ShadowRestricted: it would deny every tool.
func restrictedShadow(opts stackOptions) string {
	if !opts.ShadowRestricted {
		return ""
	}
	return `
    policy_shadow:
      allow: {and: [{domain: {is: example.com}}]}
      deny: {and: [{mcp_tool: {not_in: [no-such-tool]}}]}`
}

// Tool lists filtered by policy (docs/tool-lists.md) and shadow policies (docs/policy.md),
// with the official SDK clients against the Go SDK everything-server: on the restricted
// route, whose policy allows only test_simple_text, the client's listTools() returns exactly
// that tool; on the open route it returns the server's whole list. The restricted route has a
// shadow policy that would deny every tool: the call still succeeds, and the record and the
// counters show what the shadow would have done.
func TestToolLists_SDKClientsListOnlyTheToolsThePolicyAllows(t *testing.T) {
	s := startStackWith(t, stackOptions{ShadowRestricted: true})
	clients := []struct {
		name string
		run  func(testing.TB, harness.ClientOptions) (*harness.ClientResult, error)
	}{
		{"TSClient", harness.RunTSClient},
		{"GoClient", harness.RunGoClient},
	}
	for _, c := range clients {
		t.Run(c.name, func(t *testing.T) {
			res, err := c.run(t, harness.ClientOptions{URL: s.RestrictedURL, Tool: "test_simple_text", NoRefresh: true})
			if err != nil {
				t.Fatalf("%v\nbrowser: %v", err, res.Browser)
			}
			if !slices.Equal(res.Tools, []string{"test_simple_text"}) {
				t.Errorf("listTools() on the restricted route = %v, want exactly [test_simple_text]", res.Tools)
			}
			if res.Call == nil || res.Call.IsError {
				t.Errorf("test_simple_text: %+v; the shadow policy must not change the outcome", res.Call)
			}
			open, err := c.run(t, harness.ClientOptions{URL: s.OpenURL, NoRefresh: true})
			if err != nil {
				t.Fatalf("%v\nbrowser: %v", err, open.Browser)
			}
			if len(open.Tools) < 2 || !slices.Contains(open.Tools, "test_simple_text") || !slices.Contains(open.Tools, "test_error_handling") {
				t.Errorf("listTools() on the open route = %v, want the server's whole list", open.Tools)
			}
		})
	}
	counters := map[string]int64{}
	for _, m := range s.Gateway.Host().Metrics() {
		counters[m.Name] = m.Value
	}
	if counters["mcp_gateway_tools_list_filtered"] < 2 {
		t.Errorf("mcp_gateway_tools_list_filtered = %d, want at least 2 (a list per client)", counters["mcp_gateway_tools_list_filtered"])
	}
	if counters["mcp_gateway_shadow_would_deny"] < 2 {
		t.Errorf("mcp_gateway_shadow_would_deny = %d, want at least 2 (a call per client)", counters["mcp_gateway_shadow_would_deny"])
	}
	found := false
	for _, line := range s.Gateway.Host().GuestLogs(host.LogInfo) {
		if strings.Contains(line, `"mcp-tool":"test_simple_text"`) && strings.Contains(line, `"allow":true`) &&
			strings.Contains(line, `"shadow-allow":false`) && strings.Contains(line, `"shadow-deny":true`) {
			found = true
			break
		}
	}
	if !found {
		t.Errorf("no record of test_simple_text allowed with shadow-allow false")
	}
}
