package wwwauth

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		want Challenge
		ok   bool
	}{
		{`Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource", scope="a b"`,
			Challenge{ResourceMetadata: "https://mcp.example.com/.well-known/oauth-protected-resource", Scope: "a b"}, true},
		{`Basic realm="x", Bearer error="insufficient_scope", scope="files:write"`, Challenge{Error: "insufficient_scope", Scope: "files:write"}, true},
		{`bearer error=invalid_token`, Challenge{Error: "invalid_token"}, true},
		{`Bearer realm="a\"b", scope="x"`, Challenge{Scope: "x"}, true},
		{`Bearer scope="x", Basic realm="y"`, Challenge{Scope: "x"}, true},
		{`Basic realm="x"`, Challenge{}, false},
		{`Bearer resource_metadata="unterminated`, Challenge{}, false},
		{`Bearer x="1", Bearer y="2"`, Challenge{}, false},
		{`Bearer scope="a\u0001"`, Challenge{Scope: "au0001"}, true},
		{"Bearer scope=\"a\x01\"", Challenge{}, false},
		{`Bearer`, Challenge{}, true},
	}
	for _, tc := range cases {
		got, ok := Parse(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Parse(%q) = %+v, %v; want %+v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// visible reports whether s is printable ASCII (tabs and spaces allowed).
func visible(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\t') || c >= 0x7f {
			return false
		}
	}
	return true
}

// FuzzParse: whatever WWW-Authenticate an upstream sends, the parser does not panic
// and what it returns is printable, bounded text taken from a Bearer challenge.
func FuzzParse(f *testing.F) {
	f.Add(`Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource", scope="a b"`)
	f.Add(`Basic realm="x", Bearer error="insufficient_scope", scope="files:write"`)
	f.Add(`Bearer realm="a\"b", error=invalid_token`)
	f.Add(`Bearer abc==, Basic realm=x`)
	f.Add(`Bearer`)
	f.Add(`Bearer resource_metadata="unterminated`)
	f.Add(`Bearer x="1", Bearer y="2"`)
	f.Fuzz(func(t *testing.T, v string) {
		c, ok := Parse(v)
		if !ok {
			if c != (Challenge{}) {
				t.Fatalf("refused challenge returned %+v", c)
			}
			return
		}
		if !strings.Contains(strings.ToLower(v), "bearer") {
			t.Fatalf("no Bearer scheme in %q, got %+v", v, c)
		}
		for _, s := range []string{c.ResourceMetadata, c.Scope, c.Error} {
			if len(s) > len(v) || !visible(s) {
				t.Fatalf("parameter %q of %q", s, v)
			}
		}
	})
}
