package plugin

import (
	"net/url"
	"strings"
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

// FuzzIsSessionParam_MatchesReplacer compares isSessionParam with its former form, which
// removed '_', '.', ' ' and '-' with a strings.Replacer.
func FuzzIsSessionParam_MatchesReplacer(f *testing.F) {
	for _, s := range []string{"sessionId", "session_id", "Session.ID", "session id[]", "s-e_s.s ion%49d", "sessi\xffonid", "ſessionid", "x"} {
		f.Add(s)
	}
	strip := strings.NewReplacer("_", "", ".", "", " ", "", "-", "")
	f.Fuzz(func(t *testing.T, name string) {
		want := name
		if strings.ContainsAny(want, "%+") {
			if n, ok := queryUnescape(want); ok {
				want = n
			}
		}
		if i := strings.IndexByte(want, '['); i >= 0 {
			want = want[:i]
		}
		if got, want := isSessionParam(name), strings.EqualFold(strip.Replace(want), "sessionid"); got != want {
			t.Fatalf("isSessionParam(%q) = %v, want %v", name, got, want)
		}
	})
}
