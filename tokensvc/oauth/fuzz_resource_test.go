package oauth

import (
	"net/url"
	"strings"
	"testing"

	"github.com/mcpmesh/gateway/tokensvc/hosts"
)

// FuzzResolveResource checks resource resolution (resource.go): no panics, and whatever it
// accepts is a URL of the host without userinfo, query, fragment, escapes or dot segments,
// resolving to an mcp.server route of that host (or its origin) whose path covers the
// resource's. Seeds: testdata/fuzz.
func FuzzResolveResource(f *testing.F) {
	cfg := resourceConfig()
	table := hosts.NewTable(cfg)
	hostList := []*hosts.Host{table.Lookup("mcp.example.com"), table.Lookup("bare.example.com"), table.Lookup("solo.example.com")}
	f.Fuzz(func(t *testing.T, raw string) {
		for _, h := range hostList {
			id, problem := resolveResource(h, raw)
			if problem != resourceOK {
				if id != "" {
					t.Fatalf("%q refused (%s) but resolved to %q", raw, problem, id)
				}
				continue
			}
			if strings.ContainsAny(raw, "?#%;\\ \t\r\n") {
				t.Fatalf("accepted %q with a query, fragment, escape, backslash or whitespace", raw)
			}
			u, err := url.Parse(raw)
			if err != nil || u.User != nil || u.Opaque != "" {
				t.Fatalf("accepted %q: %v", raw, err)
			}
			for _, seg := range strings.Split(u.Path, "/") {
				if seg == "." || seg == ".." {
					t.Fatalf("accepted %q with a dot segment", raw)
				}
			}
			if strings.Contains(u.Path, "//") {
				t.Fatalf("accepted %q with an empty segment", raw)
			}
			if got := u.Scheme + "://" + hosts.Normalize(u.Host, u.Scheme); got != h.Origin {
				t.Fatalf("%q accepted on %s", raw, h.Origin)
			}
			if id == h.Origin {
				if _, isRoute := serverRoute(h, id); !isRoute && strings.Trim(u.Path, "/") != "" {
					t.Fatalf("%q resolved to the whole host %s", raw, id)
				}
				continue
			}
			rt, ok := serverRoute(h, id)
			if !ok {
				t.Fatalf("%q resolved to %q, no mcp.server route of %s", raw, id, h.Origin)
			}
			p := u.Path
			if len(p) > 1 {
				p = strings.TrimSuffix(p, "/")
			}
			if p == "" {
				p = "/"
			}
			if !prefixCovers(rt.Normalized().PathPrefix, p) {
				t.Fatalf("%q resolved to %q whose prefix does not cover it", raw, id)
			}
		}
	})
}
