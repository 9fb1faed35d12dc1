package oauth

import (
	"net/url"
	"strings"
	"testing"
)

func TestValidateRedirectURI(t *testing.T) {
	t.Parallel()
	cases := []struct {
		uri string
		ok  bool
	}{
		{"https://client.example.com/callback", true},
		{"https://client.example.com:8443/cb?tenant=a", true},
		{"http://127.0.0.1/callback", true},
		{"http://127.0.0.1:33418/callback", true},
		{"http://[::1]:8080/cb", true},
		{"http://localhost:3000/oauth/callback", true},
		{"com.example.app:/oauth2redirect", true},
		{"com.example.app://callback/path", true},
		{"cursor.app:/callback", true},

		{"", false},
		{"/relative/callback", false},
		{"callback", false},
		{"http://client.example.com/callback", false}, // http off loopback
		{"http://127.0.0.1.evil.example/cb", false},   // look-alike loopback
		{"http://localhost.evil.example/cb", false},   // look-alike loopback
		{"http://127.0.0.2/cb", false},                // only the three RFC 8252 names
		{"javascript:alert(document.cookie)", false},  // script
		{"JavaScript://%0aalert(1)", false},           // script, mixed case
		{"data:text/html,<script>alert(1)</script>", false},
		{"file:///etc/passwd", false},
		{"vbscript:msgbox", false},
		{"myapp:/callback", true}, // private-use scheme without a dot (cursor://, vscode://)
		{"cursor://anysphere.cursor-mcp/oauth/callback", true},
		{"c:/Windows/x", false},           // one letter: a drive path
		{"intent://x/#Intent;end", false}, // Android intent
		{"ws://127.0.0.1/cb", false},      // not an app scheme
		{"chrome-extension://abc/cb", false},
		{"com.example.app:callback", false},                // opaque
		{"https://client.example.com/cb#frag", false},      // fragment
		{"https://client.example.com/cb#", false},          // empty fragment
		{"https://*.example.com/cb", false},                // wildcard
		{"https://client.example.com/*", false},            // wildcard
		{"https://user:pass@client.example.com/cb", false}, // userinfo
		{"https://good.example@evil.example/cb", false},    // userinfo trick
		{"https://client.example.com/c b", false},          // whitespace
		{"https://client.example.com/cb\n", false},         // control
		{"https://ex%61mple.com/cb", false},                // encoded host
		{"https://client.example.com\\@evil.example/cb", false},
		{"https:///cb", false}, // no host
		{"https://" + strings.Repeat("a", 2000) + ".example/cb", false},
	}
	for _, tc := range cases {
		err := validateRedirectURI(tc.uri)
		if (err == nil) != tc.ok {
			t.Errorf("validateRedirectURI(%q) = %v, want ok=%v", tc.uri, err, tc.ok)
		}
	}
}

func TestMatchRedirectURI(t *testing.T) {
	t.Parallel()
	reg := []string{
		"https://client.example.com/callback",
		"http://127.0.0.1/cb",
		"http://[::1]:9000/cb",
		"http://localhost:3000/oauth/callback?x=1",
		"com.example.app:/redirect",
	}
	cases := []struct {
		name, uri string
		ok        bool
	}{
		{"exact https", "https://client.example.com/callback", true},
		{"exact private-use", "com.example.app:/redirect", true},
		{"loopback v4, any port", "http://127.0.0.1:49152/cb", true},
		{"loopback v4, no port", "http://127.0.0.1/cb", true},
		{"loopback v6, other port", "http://[::1]:1234/cb", true},
		{"localhost, other port, same query", "http://localhost:4000/oauth/callback?x=1", true},

		{"https port does not vary", "https://client.example.com:8443/callback", false},
		{"https explicit default port is not exact", "https://client.example.com:443/callback", false},
		{"loopback path differs", "http://127.0.0.1:5000/cb2", false},
		{"loopback query differs", "http://localhost:4000/oauth/callback?x=2", false},
		{"loopback host swapped", "http://localhost:5000/cb", false},
		{"loopback with userinfo", "http://evil@127.0.0.1:5000/cb", false},
		{"loopback with fragment", "http://127.0.0.1:5000/cb#x", false},
		{"https to http downgrade", "http://client.example.com/callback", false},
		{"open redirect to another host", "https://evil.example/callback", false},
		{"look-alike suffix", "https://client.example.com.evil.example/callback", false},
		{"userinfo trick", "https://client.example.com@evil.example/callback", false},
		{"path traversal", "https://client.example.com/callback/../evil", false},
		{"extra query", "https://client.example.com/callback?next=https://evil.example", false},
		{"trailing slash", "https://client.example.com/callback/", false},
		{"case differs", "https://CLIENT.example.com/callback", false},
		{"javascript", "javascript:alert(1)", false},
		{"data", "data:text/html,hi", false},
		{"empty", "", false},
	}
	for _, tc := range cases {
		if got := matchRedirectURI(reg, tc.uri); got != tc.ok {
			t.Errorf("%s: matchRedirectURI(%q) = %v, want %v", tc.name, tc.uri, got, tc.ok)
		}
	}
}

func TestWithQuery_KeepsExistingQuery(t *testing.T) {
	t.Parallel()
	p := url.Values{"code": {"c"}, "state": {"s&x"}}
	cases := map[string]string{
		"https://a.example/cb":      "https://a.example/cb?code=c&state=s%26x",
		"https://a.example/cb?x=1":  "https://a.example/cb?x=1&code=c&state=s%26x",
		"https://a.example/cb?":     "https://a.example/cb?code=c&state=s%26x",
		"com.example.app:/redirect": "com.example.app:/redirect?code=c&state=s%26x",
	}
	for in, want := range cases {
		if got := withQuery(in, p); got != want {
			t.Errorf("withQuery(%q) = %q, want %q", in, got, want)
		}
	}
}
