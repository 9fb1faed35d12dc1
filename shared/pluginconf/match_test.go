package pluginconf

import "testing"

func TestSafePath(t *testing.T) {
	t.Parallel()
	for p, want := range map[string]bool{
		"/mcp": true, "/mcp/": true, "/a.b/c..d": true, "/.well-known/x": true, "*": true,
		"/mcp/../x": false, "/mcp/./x": false, "/..": false, "/mcp/..": false, "//mcp": false,
		"/mcp%2fx": false, "/%2E%2E/x": false, "/a\\b": false, "/a%5cb": false, "/a\x00": false, "": false, "mcp": false,
	} {
		if got := SafePath(p); got != want {
			t.Errorf("SafePath(%q) = %v, want %v", p, got, want)
		}
	}
}

func TestTable_Match(t *testing.T) {
	t.Parallel()
	tb := NewTable([]Route{
		{ID: "a", Scheme: "https", Host: "mcp.example.com", PathPrefix: "/mcp"},
		{ID: "b", Scheme: "https", Host: "mcp.example.com", PathPrefix: "/mcp/admin"},
		{ID: "c", Scheme: "http", Host: "127.0.0.2:8401", PathPrefix: "/"},
	})
	cases := []struct {
		authority, path string
		idx             int
		m               Match
	}{
		{"mcp.example.com", "/mcp", 0, Routed},
		{"mcp.example.com", "/mcp/admin/x?q", 1, Routed},
		{"MCP.EXAMPLE.COM.:443", "/mcp/tools", 0, Routed},
		{"mcp.example.com:8443", "/mcp", -1, ForeignHost},
		{"mcp.example.com", "/mcpx", -1, NoRoute},
		{"mcp.example.com", "/.well-known/oauth-protected-resource/mcp", -1, GatewayPath},
		{"mcp.example.com", "/mcp/../.gateway/x", -1, BadPath},
		{"127.0.0.2:8401", "/anything", 2, Routed},
		{"127.0.0.2", "/anything", -1, ForeignHost},
		{"evil.example.com", "/mcp", -1, ForeignHost},
	}
	for _, c := range cases {
		idx, m := tb.Match(c.authority, c.path)
		if idx != c.idx || m != c.m {
			t.Errorf("Match(%q, %q) = %d, %d; want %d, %d", c.authority, c.path, idx, m, c.idx, c.m)
		}
	}
}
