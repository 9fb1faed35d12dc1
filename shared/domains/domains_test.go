package domains

import (
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

func TestLoopbackLiteralListed(t *testing.T) {
	t.Parallel()
	patterns := []string{"127.0.0.1", "::1", "*.example.com"}
	for host, want := range map[string]bool{
		"127.0.0.1": true, "[::1]": true, "::1": true, "127.0.0.2": false, "10.0.0.1": false,
		"localhost": false, "a.example.com": false, "::ffff:127.0.0.1": false,
	} {
		if got := LoopbackLiteralListed(patterns, host); got != want {
			t.Errorf("LoopbackLiteralListed(%q) = %v, want %v", host, got, want)
		}
	}
	if LoopbackLiteralListed([]string{"10.0.0.1"}, "10.0.0.1") {
		t.Error("a private address listed verbatim matched")
	}
}
