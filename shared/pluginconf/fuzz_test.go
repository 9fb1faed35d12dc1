package pluginconf

import (
	"strings"
	"testing"
)

// FuzzTableMatch: route matching never panics, and a routed request's path (before the query)
// is under the route's prefix, safe, and read the same way by the most lenient upstream.
func FuzzTableMatch(f *testing.F) {
	for _, s := range [][2]string{
		{"mcp.example.com", "/mcp"}, {"shared.example.com", "/%61dmin"}, {"shared.example.com", "/admin;x/..;/"},
		{"MCP.example.com.:0443", "/mcp/x?y#z"}, {"[::1]:08402", "/mcp"}, {"a@mcp.example.com", "/"}, {":", ""}, {"", "/"},
	} {
		f.Add(s[0], s[1])
	}
	tb := redTeamTable()
	strict := NewTableFor(&Config{AuthenticateServiceURL: "http://127.0.0.1:8400", Routes: tb.routes})
	f.Fuzz(func(t *testing.T, authority, path string) {
		for _, table := range []*Table{tb, strict} {
			idx, m := table.Match(authority, path)
			if m != Routed {
				if idx != -1 {
					t.Fatalf("Match(%q, %q) = %d, %d", authority, path, idx, m)
				}
				continue
			}
			p := path
			if i := strings.IndexAny(p, "?#"); i >= 0 {
				p = p[:i]
			}
			r := table.Route(idx)
			if !PrefixMatches(r.PathPrefix, p) || !SafePath(p) || strings.Contains(p+"/", "/../") || strings.Contains(p+"/", "/./") {
				t.Fatalf("Match(%q, %q) routed to %+v", authority, path, r)
			}
			if !prefixMatchesFold(table.loose[idx], loosePath(p)) {
				t.Fatalf("Match(%q, %q): the lenient reading leaves route %d", authority, path, idx)
			}
		}
	})
}
