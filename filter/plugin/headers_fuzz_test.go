package plugin

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

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

// refParseBearer is parseBearer as it was written with strings.Cut, strings.EqualFold and
// strings.TrimLeft: the oracle of the ASCII reading.
func refParseBearer(v string) (string, bool) {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(v), " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return "", false
	}
	tok = strings.TrimLeft(tok, " ")
	if len(tok) > 4096 || !isToken68(tok) {
		return "", false
	}
	return tok, true
}

func checkParseBearer(t *testing.T, v string) {
	t.Helper()
	g, gok := parseBearer(v)
	w, wok := refParseBearer(v)
	if g != w || gok != wok {
		t.Fatalf("parseBearer(%q) = %q, %v; the reference gives %q, %v", v, g, gok, w, wok)
	}
}

func TestParseBearer_MatchesReference(t *testing.T) {
	t.Parallel()
	// The ASCII comparison of the scheme holds because no other rune folds to a letter of it.
	for _, r := range "bearerBEARER" {
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if f >= utf8.RuneSelf {
				t.Fatalf("%q folds to %q", r, f)
			}
		}
	}
	for _, v := range []string{"Bearer abc", "bearer  x", "BEARER x", "Bearer", "Bearer ", "Bearerx y", " Bearer\tx", "\u00a0Bearer x\u00a0",
		"Bearer\u00a0x", "Beaŗer x", "Bearer x y", "bearer\t x", "x Bearer y", "Bearer " + strings.Repeat("a", 4096)} {
		checkParseBearer(t, v)
	}
}

func FuzzParseBearer_MatchesReference(f *testing.F) {
	for _, s := range []string{"Bearer abc", "bEaReR   x=", " Bearer\u2000x", "Basic a", "Bearer\x00 x"} {
		f.Add(s)
	}
	f.Fuzz(checkParseBearer)
}
