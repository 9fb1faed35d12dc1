package config

import (
	"strings"
	"testing"

	"github.com/mcpmesh/gateway/shared/pluginconf"
)

// policy_shadow is parsed as strictly as policy, its errors naming its own key path, and
// mcp.server.filter_tool_list reaches the filter as no_tool_list_filter.
func TestParse_PolicyShadowAndFilterToolList(t *testing.T) {
	t.Parallel()
	bad := []struct{ name, yaml, want string }{
		{"unknown operator", strings.Replace(validBase, "mcp: {server: {}}", "mcp: {server: {}}\n    policy_shadow: {deny: {and: [{mcp_tool: {regex: x}}]}}", 1), "routes[0]: policy_shadow.deny.and[0].mcp_tool"},
		{"unknown key", strings.Replace(validBase, "mcp: {server: {}}", "mcp: {server: {}}\n    policy_shadow: {alow: {and: []}}", 1), "routes[0]: policy_shadow"},
		{"list entry", strings.Replace(validBase, "mcp: {server: {}}", "mcp: {server: {}}\n    policy_shadow: [{allow: {and: [{email: 3}]}}]", 1), "routes[0]: policy_shadow[0].allow.and[0].email"},
		{"filter_tool_list not a bool", strings.Replace(validBase, "mcp: {server: {}}", "mcp: {server: {filter_tool_list: sometimes}}", 1), "routes[0].mcp.server.filter_tool_list"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(tc.yaml), noEnv)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v\nwant it to contain %q", err, tc.want)
			}
		})
	}
	for _, tc := range []struct {
		name, server string
		shadow       bool
		noFilter     bool
	}{
		{"defaults", "{}", false, false},
		{"filter on", "{filter_tool_list: true}", false, false},
		{"filter off", "{filter_tool_list: false}", false, true},
		{"shadow", "{}}\n    policy_shadow: {allow: {and: [{authenticated_user: true}]}", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := Parse([]byte(strings.Replace(validBase, "mcp: {server: {}}", "mcp: {server: "+tc.server+"}", 1)), noEnv)
			if err != nil {
				t.Fatal(err)
			}
			pc, err := pluginconf.Parse(c.PluginConfigJSON())
			if err != nil {
				t.Fatal(err)
			}
			r := pc.Routes[0]
			if r.NoToolListFilter != tc.noFilter || (r.PolicyShadow != nil) != tc.shadow {
				t.Fatalf("plugin route: no_tool_list_filter %v, policy_shadow %v; want %v, %v", r.NoToolListFilter, r.PolicyShadow, tc.noFilter, tc.shadow)
			}
		})
	}
}
