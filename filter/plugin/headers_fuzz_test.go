package plugin

import (
	"strings"
	"testing"

	"github.com/mcpmesh/gateway/shared/pluginconf"
)

func TestParseBearer(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"Bearer abc.DEF-_~+/=":                "abc.DEF-_~+/=",
		"bearer  tok":                         "tok",
		"Bearer":                              "",
		"Bearer ":                             "",
		"Basic YTpi":                          "",
		"Bearer a b":                          "",
		"Bearer a\"b":                         "",
		"Bearer " + strings.Repeat("a", 4097): "",
	}
	for in, want := range cases {
		got, ok := parseBearer(in)
		if got != want || ok != (want != "") {
			t.Errorf("parseBearer(%.30q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}

func TestSafePath(t *testing.T) {
	t.Parallel()
	for p, want := range map[string]bool{
		"/mcp": true, "/mcp/": true, "/a.b/c..d": true, "/.well-known/x": true,
		"/mcp/../x": false, "/mcp/./x": false, "/..": false, "/mcp/..": false, "//mcp": false,
		"/mcp%2fx": false, "/%2E%2E/x": false, "/a\\b": false, "/a%5cb": false, "/a\x00": false, "": false, "mcp": false,
	} {
		if got := safePath(p); got != want {
			t.Errorf("safePath(%q) = %v, want %v", p, got, want)
		}
	}
}

func FuzzParseBearer(f *testing.F) {
	for _, s := range []string{"Bearer abc", "bearer  x", "Basic a", "", "Bearer \x00", "Bearer " + strings.Repeat("z", 5000)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		tok, ok := parseBearer(v)
		if ok && (tok == "" || strings.ContainsAny(tok, " \t\r\n\",;\\")) {
			t.Fatalf("parseBearer(%q) accepted %q", v, tok)
		}
	})
}

func FuzzParseCookie(f *testing.F) {
	for _, s := range []string{"_gateway_session=abc", "a=b; _gateway_session=\"q\"", ";;=;", "_gateway_session="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		v, ok := parseCookie(raw, "_gateway_session")
		if ok && (v == "" || len(v) > 512 || strings.ContainsAny(v, ";\"")) {
			t.Fatalf("parseCookie(%q) = %q", raw, v)
		}
	})
}

func FuzzRouteMatch(f *testing.F) {
	for _, s := range [][2]string{{"mcp.example.com", "/mcp"}, {"MCP.example.com.:443", "/mcp/x?y"}, {"mcp.example.com", "/mcp/%2e%2e/"}, {"[::1]:8080", "/"}, {":", ""}} {
		f.Add(s[0], s[1])
	}
	rt := newRouteTable([]*route{
		{Route: routeConf("https", "mcp.example.com", "/mcp")},
		{Route: routeConf("https", "mcp.example.com", "/mcp/admin")},
	})
	f.Fuzz(func(t *testing.T, authority, path string) {
		r, res := rt.match(authority, path)
		if res == routed {
			p := path
			if i := strings.IndexAny(p, "?#"); i >= 0 {
				p = p[:i]
			}
			if r == nil || !prefixMatches(r.PathPrefix, p) || !safePath(p) || strings.Contains(p, "..") && strings.Contains(p, "/../") {
				t.Fatalf("match(%q, %q) routed to %+v", authority, path, r)
			}
		}
	})
}

func routeConf(scheme, host, prefix string) pluginconf.Route {
	return pluginconf.Route{ID: scheme + "://" + host + prefix, Scheme: scheme, Host: host, PathPrefix: prefix, Kind: pluginconf.KindServer}
}
