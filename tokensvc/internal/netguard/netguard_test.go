package netguard

import (
	"net/netip"
	"strings"
	"testing"
)

func TestDomainAllowed(t *testing.T) {
	t.Parallel()
	patterns := []string{"*.example.com", "exact.example.org", "Mixed.Example.NET.", "*.", "*"}
	cases := []struct {
		host string
		ok   bool
	}{
		{"a.example.com", true},
		{"a.b.example.com", true},  // deeper subdomain
		{"A.Example.COM", true},    // case-insensitive
		{"a.example.com.", true},   // trailing dot
		{"example.com", false},     // bare domain not matched by *.
		{"evilexample.com", false}, // look-alike suffix
		{"example.com.evil.net", false},
		{"a.example.co", false},
		{".example.com", false}, // empty label
		{"exact.example.org", true},
		{"EXACT.example.org.", true},
		{"a.exact.example.org", false}, // bare pattern is exact
		{"mixed.example.net", true},    // pattern normalised too
		{"127.0.0.1", false},           // IP literals never match
		{"::1", false},
		{"[::1]", false},
		{"", false},
		{"anything.org", false}, // "*" and "*." are not wildcards for everything
	}
	for _, tc := range cases {
		if got := DomainAllowed(patterns, tc.host); got != tc.ok {
			t.Errorf("DomainAllowed(%q) = %v, want %v", tc.host, got, tc.ok)
		}
	}
	if DomainAllowed([]string{"*.1.2.3"}, "4.1.2.3") {
		t.Error("an IPv4 address matched a numeric pattern")
	}
}

func TestPublicAddr(t *testing.T) {
	t.Parallel()
	blocked := []string{
		"127.0.0.1", "127.1.2.3", "10.0.0.1", "172.16.0.1", "172.31.255.255", "192.168.1.1",
		"169.254.169.254", "100.64.0.1", "100.127.255.255", "0.0.0.0", "0.1.2.3", "192.0.0.170",
		"192.0.2.1", "198.18.0.1", "198.51.100.7", "203.0.113.9", "224.0.0.1", "239.255.255.250",
		"255.255.255.255", "240.0.0.1",
		"::1", "::", "fc00::1", "fd12:3456::1", "fe80::1", "ff02::1", "::ffff:127.0.0.1",
		"::ffff:10.0.0.1", "::ffff:169.254.169.254", "64:ff9b::7f00:1", "64:ff9b::a9fe:a9fe",
		"64:ff9b::a00:1", "64:ff9b:1::1", "::127.0.0.1", "2001:db8::1", "2002:7f00:1::1",
		"2001:0::1", "100::1", "3fff::1", "fe80::1%eth0",
	}
	public := []string{"8.8.8.8", "1.1.1.1", "93.184.216.34", "100.128.0.1", "2606:4700:4700::1111",
		"2a00:1450:4001:82a::200e", "64:ff9b::808:808", "::ffff:8.8.8.8"}
	for _, s := range blocked {
		if PublicAddr(netip.MustParseAddr(s)) {
			t.Errorf("PublicAddr(%s) = true", s)
		}
	}
	for _, s := range public {
		if !PublicAddr(netip.MustParseAddr(s)) {
			t.Errorf("PublicAddr(%s) = false", s)
		}
	}
	if PublicAddr(netip.Addr{}) {
		t.Error("zero address is public")
	}
}

// FuzzDomainAllowed checks the allowlist matcher against its definition.
func FuzzDomainAllowed(f *testing.F) {
	f.Fuzz(func(t *testing.T, pattern, host string) {
		if !DomainAllowed([]string{pattern}, host) {
			return
		}
		h := strings.ToLower(strings.TrimSuffix(host, "."))
		p := strings.ToLower(strings.TrimSuffix(strings.TrimSpace(pattern), "."))
		if !ValidDNSName(h) {
			t.Fatalf("pattern %q allowed invalid host %q", pattern, host)
		}
		if rest, ok := strings.CutPrefix(p, "*."); ok {
			if !strings.HasSuffix(h, "."+rest) || h == rest {
				t.Fatalf("pattern %q allowed %q", pattern, host)
			}
			return
		}
		if h != p {
			t.Fatalf("exact pattern %q allowed %q", pattern, host)
		}
	})
}
