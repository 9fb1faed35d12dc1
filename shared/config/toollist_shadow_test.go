package config

import (
	"os"
	"path/filepath"
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

// mcp.server.tool_lock reads its lock file strictly, relative to the configuration's
// directory, and names the key path of every problem.
func TestParse_ToolLock(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := `{"version":1,"tools":[{"name":"echo","digest":"sha256:` + strings.Repeat("a", 64) + `"}]}`
	for name, text := range map[string]string{
		"good.json":       good,
		"bad-digest.json": `{"version":1,"tools":[{"name":"echo","digest":"md5:x"}]}`,
		"unknown.json":    `{"version":1,"tools":[],"extra":1}`,
		"dup.json":        `{"version":1,"tools":[{"name":"a","digest":"sha256:` + strings.Repeat("a", 64) + `"},{"name":"a","digest":"sha256:` + strings.Repeat("b", 64) + `"}]}`,
		"edited.json":     `{"version":1,"tools":[{"name":"a","digest":"sha256:` + strings.Repeat("a", 64) + `","definition":{"name":"a"}}]}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	with := func(lock string) []byte {
		return []byte(strings.Replace(validBase, "mcp: {server: {}}", "mcp: {server: {tool_lock: "+lock+"}}", 1))
	}
	for _, tc := range []struct{ name, lock, want string }{
		{"no file", "{mode: warn}", "routes[0].mcp.server.tool_lock.file: is required"},
		{"missing file", "{file: nope.json}", "routes[0].mcp.server.tool_lock.file: cannot read"},
		{"bad mode", "{file: good.json, mode: audit}", "routes[0].mcp.server.tool_lock.mode: must be enforce or warn"},
		{"bad digest", "{file: bad-digest.json}", "tools[0].digest: want sha256:"},
		{"unknown member", "{file: unknown.json}", `unknown field "extra"`},
		{"duplicate tool", "{file: dup.json}", `tools[1].name: "a" is pinned twice`},
		{"edited definition", "{file: edited.json}", "tools[0].definition: its digest is"},
		{"unknown key", "{file: good.json, strict: true}", "routes[0].mcp.server.tool_lock.strict: unknown key"},
		{"lists not filtered", "{file: good.json}, filter_tool_list: false", "routes[0].mcp.server.filter_tool_list: false cannot go with tool_lock"},
	} {
		_, err := ParseDir(with(tc.lock), noEnv, dir)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error = %v\nwant it to contain %q", tc.name, err, tc.want)
		}
	}
	c, err := ParseDir(with("{file: good.json, mode: warn}"), noEnv, dir)
	if err != nil {
		t.Fatal(err)
	}
	pins := c.PluginConfig().Routes[0].ToolPins
	if pins == nil || !pins.Warn || pins.Digests["echo"] != "sha256:"+strings.Repeat("a", 64) {
		t.Fatalf("plugin route pins %+v", pins)
	}
}
