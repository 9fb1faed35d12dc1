package pluginconf

import (
	"net/netip"
	"net/url"
	"testing"
)

func TestOriginHost(t *testing.T) {
	t.Parallel()
	tests := []struct {
		raw, scheme, host string
		ok                bool
	}{
		{"https://auth.example.com", "https", "auth.example.com", true},
		{"HTTPS://Auth.Example.COM:443/", "https", "Auth.Example.COM:443", true},
		{"http://127.0.0.1:8400", "http", "127.0.0.1:8400", true},
		{"http://localhost:8000/?x=1#top", "http", "localhost:8000", true},
		{"http://[::1]:8443/", "http", "[::1]:8443", true},
		{"https://auth.example.com?q", "https", "auth.example.com", true},
		{"https://auth.example.com:", "https", "auth.example.com:", true},
		{"https://", "https", "", true}, // no host: the caller ignores it, as url.Parse's
		{"https://user@auth.example.com", "", "", false},
		{"https://auth%2eexample.com", "", "", false},
		{"https://[127.0.0.1]", "", "", false},
		{"https://auth.example.com:44x3", "", "", false},
		{"auth.example.com", "", "", false},
		{"", "", "", false},
	}
	for _, tt := range tests {
		scheme, host, ok := originHost(tt.raw)
		if scheme != tt.scheme || host != tt.host || ok != tt.ok {
			t.Errorf("originHost(%q) = %q, %q, %v; want %q, %q, %v", tt.raw, scheme, host, ok, tt.scheme, tt.host, tt.ok)
		}
		if ok {
			u, err := url.Parse(tt.raw)
			if err != nil || u.Scheme != scheme || u.Host != host {
				t.Errorf("url.Parse(%q) = %v, %v; originHost %q, %q", tt.raw, u, err, scheme, host)
			}
		}
	}
}

// FuzzOriginHost_MatchesURLParse checks that wherever originHost reads a URL, url.Parse
// reads the same scheme and host. Seeds: f.Add and
// testdata/fuzz/FuzzOriginHost_MatchesURLParse.
func FuzzOriginHost_MatchesURLParse(f *testing.F) {
	for _, s := range []string{"https://auth.example.com", "http://[::1]:8443/x?y#z", "HTTP://a_b~c:0", "https://a:b:c", "x+y://h/%", "https://[fe80::1%25en0]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		scheme, host, ok := originHost(raw)
		if !ok {
			return
		}
		u, err := url.Parse(raw)
		if err != nil || u.Scheme != scheme || u.Host != host {
			t.Fatalf("url.Parse(%q) = %#v, %v; originHost %q, %q", raw, u, err, scheme, host)
		}
	})
}

func TestValidIPv6(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		s  string
		ok bool
	}{
		{"::", true}, {"::1", true}, {"1::", true}, {"fe80::1:2", true}, {"1:2:3:4:5:6:7:8", true},
		{"::ffff:1.2.3.4", true}, {"1:2:3:4:5:6:1.2.3.4", true}, {"ABCD::ef", true},
		{"1:2:3:4:5:6:7:8:9", false}, {"1:2:3:4:5:6:7::8", false}, {"1::2::3", false}, {":1", false},
		{"1:", false}, {":::", false}, {"12345::", false}, {"::1.2.3", false}, {"::01.2.3.4", false},
		{"::256.1.1.1", false}, {"1:2:3:4:5:6:7:1.2.3.4", false}, {"1.2.3.4", false}, {"::1%eth0", false}, {"", false},
	} {
		if got := validIPv6(tt.s); got != tt.ok {
			t.Errorf("validIPv6(%q) = %v, want %v", tt.s, got, tt.ok)
		}
		if got := netipV6(tt.s); got != tt.ok {
			t.Errorf("netip reads %q as IPv6: %v, want %v", tt.s, got, tt.ok)
		}
	}
}

// netipV6 is what validIPv6 stands for.
func netipV6(s string) bool {
	a, err := netip.ParseAddr(s)
	return err == nil && !a.Is4() && a.Zone() == ""
}

// FuzzValidIPv6_MatchesNetip checks validIPv6 against netip.ParseAddr. Seeds: f.Add and
// testdata/fuzz/FuzzValidIPv6_MatchesNetip.
func FuzzValidIPv6_MatchesNetip(f *testing.F) {
	for _, s := range []string{"::", "fe80::1", "::ffff:1.2.3.4", "1:2:3:4:5:6:7:8", "1::2::3", "::1.2.3.04", "1:2:3:4:5:6::1.2.3.4"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := validIPv6(s), netipV6(s); got != want {
			t.Fatalf("validIPv6(%q) = %v, netip %v", s, got, want)
		}
	})
}
