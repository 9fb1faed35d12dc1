package upstream

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/mcpmesh/gateway/shared/domains"
)

// allowTestPatterns is an operator's mcp_allowed_upstream_domains in these tests.
var allowTestPatterns = []string{"*.vendor.example", "auth.other.example"}

// TestDiscovery_AllowedURLs: the URLs an upstream names are contacted only over https, on a
// host the allowlist matches by the "*." rules, never an IP literal, never with credentials.
func TestDiscovery_AllowedURLs(t *testing.T) {
	t.Parallel()
	d := &discoverer{allow: allowTestPatterns}
	cases := []struct {
		raw  string
		kind string // "" allowed
	}{
		{"https://mcp.vendor.example/mcp", ""},
		{"https://a.b.vendor.example/x", ""},
		{"https://MCP.Vendor.EXAMPLE./mcp", ""},
		{"https://auth.other.example/", ""},
		{"https://mcp.vendor.example:8443/mcp", ""}, // ports are the upstream's choice; the address guard still applies
		{"https://vendor.example/", FailDomainNotAllowed},
		{"https://evilvendor.example/", FailDomainNotAllowed},
		{"https://mcp.vendor.example.evil.example/", FailDomainNotAllowed},
		{"https://x.auth.other.example/", FailDomainNotAllowed},
		{"https://other.example/", FailDomainNotAllowed},
		{"https://xn--vndor-fsa.example/", FailDomainNotAllowed},
		{"https://mcp.xn--vndor-fsa.example/", FailDomainNotAllowed},
		{"https://127.0.0.1/", FailDomainNotAllowed},
		{"https://[::1]/", FailDomainNotAllowed},
		{"https://[::ffff:10.0.0.1]/", FailDomainNotAllowed},
		{"https://169.254.169.254/latest/meta-data", FailDomainNotAllowed},
		{"https://2130706433/", FailDomainNotAllowed},
		{"http://mcp.vendor.example/mcp", FailMetadataMalformed},
		{"ftp://mcp.vendor.example/", FailMetadataMalformed},
		{"//mcp.vendor.example/mcp", FailMetadataMalformed},
		{"https://user:pw@mcp.vendor.example/", FailMetadataMalformed},
		{"https://evil.example@mcp.vendor.example/", FailMetadataMalformed},
		{"https://mcp.vendor.example%2eevil.example/", FailMetadataMalformed},
		{"https:///mcp", FailMetadataMalformed},
		{"mcp.vendor.example/mcp", FailMetadataMalformed},
		{"https://évil.vendor.example/", FailDomainNotAllowed},
	}
	for _, tc := range cases {
		err := d.allowed("test", tc.raw)
		got := ""
		if de, ok := err.(*DiscoveryError); ok {
			got = de.Kind
		} else if err != nil {
			t.Errorf("allowed(%q) = %v, not a DiscoveryError", tc.raw, err)
			continue
		}
		if got != tc.kind {
			t.Errorf("allowed(%q): kind %q, want %q (%v)", tc.raw, got, tc.kind, err)
		}
	}
}

// FuzzDiscoveryAllowed: a URL that passes the check is https, without credentials, and the
// request the gateway builds for it goes to the very host that was matched.
func FuzzDiscoveryAllowed(f *testing.F) {
	for _, s := range []string{"https://mcp.vendor.example/mcp", "https://MCP.vendor.example.:443/x?y#z", "https://vendor.example/",
		"https://a@mcp.vendor.example/", "https://[::1]/", "http://auth.other.example/", "https://auth.other.example\\@x/"} {
		f.Add(s)
	}
	d := &discoverer{allow: allowTestPatterns}
	f.Fuzz(func(t *testing.T, raw string) {
		if d.allowed("fuzz", raw) != nil {
			return
		}
		u, err := url.Parse(raw)
		if err != nil || u.Scheme != "https" || u.User != nil {
			t.Fatalf("allowed %q", raw)
		}
		if !domains.DomainAllowed(allowTestPatterns, u.Hostname()) {
			t.Fatalf("allowed %q: host %q matches no pattern", raw, u.Hostname())
		}
		req, err := http.NewRequest(http.MethodGet, raw, nil)
		if err != nil {
			return
		}
		if req.URL.Hostname() != u.Hostname() || req.Host != strings.TrimSuffix(u.Host, ":") { // an empty port is dropped
			t.Fatalf("allowed %q: the request goes to %q", raw, req.URL.Host)
		}
	})
}

// FuzzResourceCovers: protected-resource metadata is accepted only for the upstream's own
// origin, and for its path or a parent of it on a segment boundary.
func FuzzResourceCovers(f *testing.F) {
	for _, p := range [][2]string{
		{"https://mcp.vendor.example/mcp", "https://mcp.vendor.example/mcp"},
		{"https://mcp.vendor.example", "https://mcp.vendor.example/mcp"},
		{"https://MCP.vendor.example.:443/", "https://mcp.vendor.example/mcp"},
		{"https://mcp.vendor.example/m", "https://mcp.vendor.example/mcp"},
		{"https://mcp.vendor.example/mcp/other", "https://mcp.vendor.example/mcp"},
		{"http://mcp.vendor.example/mcp", "https://mcp.vendor.example/mcp"},
		{"https://mcp.vendor.example:444/mcp", "https://mcp.vendor.example/mcp"},
		{"https://evil.example/mcp", "https://mcp.vendor.example/mcp"},
	} {
		f.Add(p[0], p[1])
	}
	f.Fuzz(func(t *testing.T, resource, target string) {
		if !resourceCovers(resource, target) {
			return
		}
		r, err1 := url.Parse(resource)
		u, err2 := url.Parse(target)
		if err1 != nil || err2 != nil {
			t.Fatalf("covers unparsable %q %q", resource, target)
		}
		if !strings.EqualFold(r.Scheme, u.Scheme) || canonicalHost(r) != canonicalHost(u) {
			t.Fatalf("%q covers %q on another origin", resource, target)
		}
		rp := strings.TrimSuffix(r.EscapedPath(), "/")
		if tp := u.EscapedPath(); tp != rp && tp != rp+"/" && !strings.HasPrefix(tp, rp+"/") {
			t.Fatalf("%q covers %q outside its path", resource, target)
		}
	})
}
