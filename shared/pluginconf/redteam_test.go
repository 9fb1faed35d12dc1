package pluginconf

import "testing"

// Adversarial route matching: every case is an attempt to make the filter (which matches
// with this table) and an upstream or router resolve one request differently.

func redTeamTable() *Table {
	return NewTable([]Route{
		{ID: "https://shared.example.com", Scheme: "https", Host: "shared.example.com", PathPrefix: "/"},
		{ID: "https://shared.example.com/admin", Scheme: "https", Host: "shared.example.com", PathPrefix: "/admin"},
		{ID: "https://shared.example.com/mcp", Scheme: "https", Host: "shared.example.com", PathPrefix: "/mcp"},
		{ID: "https://shared.example.com/secrets", Scheme: "https", Host: "shared.example.com", PathPrefix: "/secrets"},
		{ID: "https://shared.example.com/kv", Scheme: "https", Host: "shared.example.com", PathPrefix: "/kv"},
		{ID: "https://mcp.example.com/mcp", Scheme: "https", Host: "mcp.example.com", PathPrefix: "/mcp"},
		{ID: "https://semi.example.com/a;v=1", Scheme: "https", Host: "semi.example.com", PathPrefix: "/a;v=1"},
		{ID: "http://127.0.0.1:8401/mcp", Scheme: "http", Host: "127.0.0.1:8401", PathPrefix: "/mcp"},
		{ID: "http://[::1]:8402/mcp", Scheme: "http", Host: "[::1]:8402", PathPrefix: "/mcp"},
	})
}

func TestTable_RedTeamPathsNeverPickALaxerRoute(t *testing.T) {
	t.Parallel()
	tb := redTeamTable()
	cases := []struct {
		name, path string
		idx        int
		m          Match
	}{
		{"plain admin path", "/admin/users", 1, Routed},
		{"plain root path", "/index.html", 0, Routed},
		{"percent-encoded letter of a longer prefix", "/%61dmin/users", -1, BadPath},
		{"percent-encoded upper-case hex", "/adm%49n", -1, BadPath},
		{"upper-case segment of a longer prefix", "/ADMIN/users", -1, BadPath},
		{"mixed case", "/Admin", -1, BadPath},
		{"path parameter after the prefix", "/admin;jsessionid=1/users", -1, BadPath},
		{"encoded path parameter", "/admin%3bx/users", -1, BadPath},
		{"trailing dot segment (IIS, .NET)", "/admin./users", -1, BadPath},
		{"trailing encoded space", "/admin%20/users", -1, BadPath},
		{"long s folds to s (.NET invariant upper)", "/%C5%BFecrets", -1, BadPath},
		{"Kelvin sign folds to k", "/%E2%84%AAv", -1, BadPath},
		{"raw UTF-8 Kelvin sign", "/\u212av", -1, BadPath},
		{"dotless i folds to i", "/adm%C4%B1n", -1, BadPath},
		{"double-encoded dot segment", "/mcp/%252e%252e/admin", -1, BadPath},
		{"double-encoded slash", "/mcp%252fadmin", -1, BadPath},
		{"overlong dot", "/mcp/%c0%ae%c0%ae/admin", -1, BadPath},
		{"raw overlong byte", "/mcp/\xc0\xae", -1, BadPath},
		{"gateway path with dot segments", "/.gateway/../admin", -1, BadPath},
		{"protected resource metadata with dot segments", "/.well-known/oauth-protected-resource/../../admin", -1, BadPath},
		{"encoded dots in the gateway prefix", "/.gateway/%2e%2e/admin", -1, BadPath},
		{"escaped slash after gateway prefix", "/.gateway%2f..%2fadmin", -1, BadPath},
		{"gateway prefix in other case is not the gateway", "/.GATEWAY/mcp/token", 0, Routed},
		{"query does not count", "/index?/../admin", 0, Routed},
		{"fragment does not count", "/index#/../admin", 0, Routed},
		{"absolute form target", "https://shared.example.com/admin", -1, BadPath},
		{"non-ambiguous escapes elsewhere pass", "/files/caf%C3%A9%20menu.pdf", 0, Routed},
		{"non-ambiguous upper case elsewhere passes", "/Files/README", 0, Routed},
	}
	for _, c := range cases {
		idx, m := tb.Match("shared.example.com", c.path)
		if idx != c.idx || m != c.m {
			t.Errorf("%s: Match(%q) = %d, %d; want %d, %d", c.name, c.path, idx, m, c.idx, c.m)
		}
	}
}

func TestTable_RedTeamPathsOnAHostWithoutRootRoute(t *testing.T) {
	t.Parallel()
	tb := redTeamTable()
	for path, want := range map[string]Match{
		"/mcp":          Routed,
		"/%6dcp":        BadPath, // an upstream that decodes reads /mcp: refuse rather than 404
		"/MCP":          BadPath,
		"/mcp;x":        BadPath,
		"/mcpx":         NoRoute,
		"/mcp%41":       NoRoute,
		"/mcp/%2E%2E/x": BadPath,
		"/mcp//x":       BadPath,
		"//mcp":         BadPath,
		"/mcp/./x":      BadPath,
		"/mcp%2fx":      BadPath,
		"/mcp\\x":       BadPath,
		"/mcp%00":       BadPath,
		"/mcp%5c..%5cx": BadPath,
		"/.well-known/oauth-protected-resource/mcp": GatewayPath,
	} {
		if _, m := tb.Match("mcp.example.com", path); m != want {
			t.Errorf("Match(mcp.example.com, %q) = %d, want %d", path, m, want)
		}
	}
	// A prefix with a path parameter of its own still matches itself.
	if idx, m := tb.Match("semi.example.com", "/a;v=1/x"); m != Routed || idx != 6 {
		t.Errorf("prefix with ';': %d, %d", idx, m)
	}
}

func TestTable_RedTeamAuthoritiesReachTheRoute(t *testing.T) {
	t.Parallel()
	tb := redTeamTable()
	cases := []struct {
		authority string
		idx       int
		m         Match
	}{
		{"mcp.example.com", 5, Routed},
		{"mcp.example.com:0443", 5, Routed},       // leading zeros: still port 443
		{"mcp.example.com:000443", 5, Routed},     //
		{"mcp.example.com..", 5, Routed},          // every trailing dot
		{"mcp.example.com.:443", 5, Routed},       //
		{"user@mcp.example.com", 5, Routed},       // user information is not the host
		{"a@b@MCP.example.com:443", 5, Routed},    //
		{"mcp.example.com:", 5, Routed},           // empty port
		{"mcp.example.com:443x", -1, NoRoute},     // not a port: never somebody else's host
		{"mcp.example.com:99999", -1, NoRoute},    //
		{"mcp.example.com:-443", -1, NoRoute},     //
		{"mcp.example.com:8443", -1, ForeignHost}, // another port may be another service (NewTableFor refuses it)
		{"127.0.0.1:08401", 7, Routed},            //
		{"127.0.0.1:8401.", -1, NoRoute},          //
		{"[::1]:8402", 8, Routed},                 //
		{"[::1]:08402", 8, Routed},                //
		{"mcp.example.com.evil.net", -1, ForeignHost},
		{"evilmcp.example.com", -1, ForeignHost},
	}
	for _, c := range cases {
		idx, m := tb.Match(c.authority, "/mcp")
		if idx != c.idx || m != c.m {
			t.Errorf("Match(%q) = %d, %d; want %d, %d", c.authority, idx, m, c.idx, c.m)
		}
	}
}

func TestNewTableFor_RouteHostOnAnotherPortIsNotWavedThrough(t *testing.T) {
	t.Parallel()
	c := &Config{
		AuthenticateServiceURL: "http://127.0.0.1:8400",
		Routes: []Route{
			{ID: "https://mcp.example.com/mcp", Scheme: "https", Host: "mcp.example.com", PathPrefix: "/mcp"},
			{ID: "http://127.0.0.1:8401/mcp", Scheme: "http", Host: "127.0.0.1:8401", PathPrefix: "/mcp"},
			{ID: "http://localhost:8402/mcp", Scheme: "http", Host: "localhost:8402", PathPrefix: "/mcp"},
			{ID: "http://localhost:8403/mcp", Scheme: "http", Host: "localhost:8403", PathPrefix: "/mcp"},
		},
	}
	tb := NewTableFor(c)
	cases := []struct {
		authority string
		m         Match
	}{
		{"mcp.example.com:8443", Routed},  // Istio ignores the port when matching hosts: so does the filter
		{"mcp.example.com:80", Routed},    // the other scheme's default port
		{"mcp.example.com:1", Routed},     //
		{"mcp.example.com:443", Routed},   //
		{"mcp.example.com:443x", NoRoute}, // not a port
		{"127.0.0.1:8400", ForeignHost},   // the authenticate service shares the host name
		{"127.0.0.1:08400", ForeignHost},  //
		{"127.0.0.1:9999", Routed},        //
		{"127.0.0.1:8401", Routed},        //
		{"localhost:8402", Routed},        //
		{"localhost:9999", NoRoute},       // routes on two ports of the name: ambiguous
		{"localhost", NoRoute},            //
		{"other.example.com:8443", ForeignHost},
	}
	for _, c := range cases {
		if _, m := tb.Match(c.authority, "/mcp"); m != c.m {
			t.Errorf("Match(%q) = %d, want %d", c.authority, m, c.m)
		}
	}
	// The lenient table keeps its documented behaviour.
	if _, m := NewTable(c.Routes).Match("mcp.example.com:8443", "/mcp"); m != ForeignHost {
		t.Errorf("NewTable: %d, want ForeignHost", m)
	}
}

func TestTable_RedTeamRouteHostsAreCanonicalToo(t *testing.T) {
	t.Parallel()
	// shared/config accepts "https://mcp.example.com:0443/mcp" as host "mcp.example.com:0443":
	// requests for mcp.example.com must still reach that route, not pass as foreign.
	tb := NewTable([]Route{
		{ID: "https://mcp.example.com:0443/mcp", Scheme: "https", Host: "mcp.example.com:0443", PathPrefix: "/mcp"},
		{ID: "http://Local.Host.:080/mcp", Scheme: "http", Host: "Local.Host.:080", PathPrefix: "/mcp"},
	})
	for authority, want := range map[string]int{
		"mcp.example.com": 0, "mcp.example.com:443": 0, "mcp.example.com:0443": 0,
		"local.host": 1, "local.host:80": 1,
	} {
		if idx, m := tb.Match(authority, "/mcp"); m != Routed || idx != want {
			t.Errorf("Match(%q) = %d, %d; want route %d", authority, idx, m, want)
		}
	}
}

func TestCanonicalPort(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"443": "443", "0443": "443", "0": "0", "000": "0", "65535": "65535"} {
		if got, ok := canonicalPort(in); !ok || got != want {
			t.Errorf("canonicalPort(%q) = %q, %v", in, got, ok)
		}
	}
	for _, in := range []string{"", "65536", "4a", "+443", " 443", "-1"} {
		if _, ok := canonicalPort(in); ok {
			t.Errorf("canonicalPort(%q) accepted", in)
		}
	}
}

func TestTable_MatchDoesNotAllocateForPlainRequests(t *testing.T) {
	tb := redTeamTable()
	for _, c := range [][2]string{{"mcp.example.com", "/mcp"}, {"shared.example.com", "/static/app.min.js?v=1"}, {"shared.example.com", "/Files/README"}} {
		if n := testing.AllocsPerRun(100, func() { tb.Match(c[0], c[1]) }); n > 0 {
			t.Errorf("Match(%q, %q): %v allocations", c[0], c[1], n)
		}
	}
}

func BenchmarkTable_Match(b *testing.B) {
	tb := redTeamTable()
	for b.Loop() {
		tb.Match("mcp.example.com", "/mcp")
	}
}

func TestSafePath_RedTeamDotSegmentsInDisguise(t *testing.T) {
	t.Parallel()
	for p, want := range map[string]bool{
		"/public/..;/admin":    false, // Tomcat, Jetty: ".." once the parameter is dropped
		"/public/.;x/admin":    false,
		"/public/..%3b/admin":  false,
		"/;/admin":             false, // a segment that is only a parameter
		"/admin/;jsessionid=1": false,
		"/.../admin":           false, // IIS strips trailing dots: ".." or ""
		"/a/.%20/b":            false,
		"/a/%20/b":             false,
		"/a/..%20/b":           false,
		"/a;v=1/b":             true,
		"/a/b;v=1":             true,
		"/.well-known/x":       true,
		"/a/.hidden/b":         true,
		"/a/b.":                true, // a name that ends with a dot is no dot segment (the route check catches it)
		"/mcp/":                true,
		"/a/%41b":              true,
		"/files/caf%C3%A9.txt": true,
	} {
		if got := SafePath(p); got != want {
			t.Errorf("SafePath(%q) = %v, want %v", p, got, want)
		}
	}
}
