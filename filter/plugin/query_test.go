package plugin

import (
	"net/url"
	"testing"
)

func TestQueryEscape(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want string }{
		{"", ""}, {"abcXYZ019-_.~", "abcXYZ019-_.~"}, {"a b", "a+b"}, {"/mcp?x=1&y", "%2Fmcp%3Fx%3D1%26y"},
		{"é", "%C3%A9"}, {"+%", "%2B%25"},
	} {
		if got := queryEscape(tt.in); got != tt.want {
			t.Errorf("queryEscape(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestQueryUnescape(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in, want string
		ok       bool
	}{
		{"", "", true}, {"a+b", "a b", true}, {"%2fx%2F", "/x/", true}, {"%C3%A9", "é", true},
		{"%", "", false}, {"%4", "", false}, {"%zz", "", false}, {"a%2", "", false},
	} {
		if got, ok := queryUnescape(tt.in); got != tt.want || ok != tt.ok {
			t.Errorf("queryUnescape(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

// FuzzQueryEscape_MatchesNetURL checks queryEscape and queryUnescape against
// url.QueryEscape and url.QueryUnescape. Seeds: f.Add and
// testdata/fuzz/FuzzQueryEscape_MatchesNetURL.
func FuzzQueryEscape_MatchesNetURL(f *testing.F) {
	for _, s := range []string{"", "a b+c", "%41%zz", "sess%2Fion", "é\x00\xff", "%", "%%41"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := queryEscape(s), url.QueryEscape(s); got != want {
			t.Fatalf("queryEscape(%q) = %q, url.QueryEscape %q", s, got, want)
		}
		got, ok := queryUnescape(s)
		want, err := url.QueryUnescape(s)
		if ok != (err == nil) || ok && got != want {
			t.Fatalf("queryUnescape(%q) = %q, %v; url.QueryUnescape %q, %v", s, got, ok, want, err)
		}
	})
}
