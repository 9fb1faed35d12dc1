package pluginconf

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcpmesh/gateway/shared/paths"
)

// The route matching as it was before its fast paths (the plain host name, ASCII bytes in the
// fold comparison, the query cut without strings.IndexAny), kept as the oracle of
// FuzzTableMatch_MatchesReference.

func (t *Table) refMatch(authority, rawPath string) (int, Match) {
	key, wellFormed := t.refNormalizeAuthority(authority)
	idx := t.byHost[key]
	if idx == nil {
		name, _ := splitHostPort(key)
		sole, known := t.names[name]
		switch {
		case !known:
			return -1, ForeignHost
		case !wellFormed:
			return -1, NoRoute
		case !t.strict || key == t.authenticate:
			return -1, ForeignHost
		case sole == "":
			return -1, NoRoute
		}
		idx = t.byHost[sole]
	}
	path := rawPath
	if i := strings.IndexAny(path, "?#"); i >= 0 {
		path = path[:i]
	}
	if !SafePath(path) {
		return -1, BadPath
	}
	if paths.IsGateway(path) {
		return -1, GatewayPath
	}
	found := -1
	for _, i := range idx {
		if PrefixMatches(t.routes[i].PathPrefix, path) {
			found = i
			break
		}
	}
	lp := loosePath(path)
	for _, i := range idx {
		if refPrefixMatchesFold(t.loose[i], lp) {
			if i != found {
				return -1, BadPath
			}
			break
		}
	}
	if found < 0 {
		return -1, NoRoute
	}
	return found, Routed
}

func (t *Table) refNormalizeAuthority(a string) (key string, wellFormed bool) {
	a = strings.ToLower(a)
	if i := strings.LastIndexByte(a, '@'); i >= 0 {
		a = a[i+1:]
	}
	host, port := splitHostPort(a)
	host = strings.TrimRight(host, ".")
	if port == "" {
		return host, true
	}
	port, wellFormed = canonicalPort(port)
	full := host + ":" + port
	if _, ok := t.byHost[full]; ok {
		return full, wellFormed
	}
	if s, ok := t.scheme[host]; ok && ((port == "443" && s == "https") || (port == "80" && s == "http")) {
		return host, wellFormed
	}
	return full, wellFormed
}

func refPrefixMatchesFold(prefix, path string) bool {
	if prefix == "/" {
		return true
	}
	for prefix != "" {
		if path == "" {
			return false
		}
		a, n := utf8.DecodeRuneInString(prefix)
		b, m := utf8.DecodeRuneInString(path)
		if !foldEqual(a, b) {
			return false
		}
		prefix, path = prefix[n:], path[m:]
	}
	return path == "" || path[0] == '/'
}

// refTables are tables with plain, port, IPv6, upper-case, trailing-dot and non-ASCII routes.
func refTables() []*Table {
	routes := append(redTeamTable().routes,
		Route{ID: "k", Scheme: "https", Host: "fold.example.com", PathPrefix: "/\u212aelvin"},
		Route{ID: "s", Scheme: "https", Host: "fold.example.com", PathPrefix: "/\u017fecret/İ"},
		Route{ID: "u", Scheme: "https", Host: "UPPER.example.com.", PathPrefix: "/MCP"},
		Route{ID: "p", Scheme: "http", Host: "port.example.com:80", PathPrefix: "/x"},
	)
	return []*Table{NewTable(routes), NewTableFor(&Config{AuthenticateServiceURL: "http://127.0.0.1:8400", Routes: routes})}
}

func checkMatchesReference(t *testing.T, tables []*Table, authority, path string) {
	t.Helper()
	for _, tb := range tables {
		gi, gm := tb.Match(authority, path)
		wi, wm := tb.refMatch(authority, path)
		if gi != wi || gm != wm {
			t.Fatalf("Match(%q, %q) = %d, %d; the reference gives %d, %d", authority, path, gi, gm, wi, wm)
		}
		gk, gw := tb.normalizeAuthority(authority)
		wk, ww := tb.refNormalizeAuthority(authority)
		if gk != wk || gw != ww {
			t.Fatalf("normalizeAuthority(%q) = %q, %v; the reference gives %q, %v", authority, gk, gw, wk, ww)
		}
	}
	for _, prefix := range []string{"/mcp", "/\u212aelvin", "/ADMIN", "/a;v=1", "/\u017fecret/İ", "/", ""} {
		if g, w := prefixMatchesFold(prefix, path), refPrefixMatchesFold(prefix, path); g != w {
			t.Fatalf("prefixMatchesFold(%q, %q) = %v; the reference gives %v", prefix, path, g, w)
		}
	}
}

func TestTableMatch_MatchesReference(t *testing.T) {
	t.Parallel()
	tables := refTables()
	for _, authority := range []string{"mcp.example.com", "MCP.example.com", "mcp.example.com.", "mcp.example.com:443",
		"a@mcp.example.com", "fold.example.com", "upper.example.com", "port.example.com", "port.example.com:80",
		"127.0.0.1:8401", "[::1]:8402", "", ".", "-", "ex\u212aample.com", "shared.example.com:0443"} {
		for _, path := range []string{"/mcp", "/MCP/x", "/kelvin", "/\u212aelvin/a", "/KELVIN", "/secret/i", "/SECRET/ı",
			"/ſecret/İ", "/x?y", "/x#y", "/admin", "/Admin", "/a;v=1", "", "*", "/mcp%2e"} {
			checkMatchesReference(t, tables, authority, path)
		}
	}
}

func FuzzTableMatch_MatchesReference(f *testing.F) {
	for _, s := range [][2]string{
		{"mcp.example.com", "/mcp"}, {"fold.example.com", "/kelvin"}, {"fold.example.com", "/\u212aELVIN"},
		{"UPPER.example.com.", "/mcp?x"}, {"port.example.com:80", "/x#y"}, {"a@b", "/"}, {"[::1]:8402", "/mcp"},
	} {
		f.Add(s[0], s[1])
	}
	tables := refTables()
	f.Fuzz(func(t *testing.T, authority, path string) {
		checkMatchesReference(t, tables, authority, path)
	})
}
