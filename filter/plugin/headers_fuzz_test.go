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
	cfg := &pluginconf.Config{Routes: []pluginconf.Route{
		routeConf("https", "mcp.example.com", "/mcp"),
		routeConf("https", "mcp.example.com", "/mcp/admin"),
	}}
	rt := newRouteTable(cfg, []*route{{Route: cfg.Routes[0]}, {Route: cfg.Routes[1]}})
	f.Fuzz(func(t *testing.T, authority, path string) {
		r, res := rt.match(authority, path)
		if res == pluginconf.Routed {
			p := path
			if i := strings.IndexAny(p, "?#"); i >= 0 {
				p = p[:i]
			}
			if r == nil || !pluginconf.PrefixMatches(r.PathPrefix, p) || strings.Contains(p+"/", "/../") || strings.Contains(p+"/", "/./") {
				t.Fatalf("match(%q, %q) routed to %+v", authority, path, r)
			}
		}
	})
}

func routeConf(scheme, host, prefix string) pluginconf.Route {
	return pluginconf.Route{ID: scheme + "://" + host + prefix, Scheme: scheme, Host: host, PathPrefix: prefix, Kind: pluginconf.KindServer}
}
