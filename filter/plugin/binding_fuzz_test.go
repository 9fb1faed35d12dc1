package plugin

import (
	"mime"
	"strings"
	"testing"
)

func TestContentTypeOf(t *testing.T) {
	t.Parallel()
	cases := []struct {
		values []string
		want   int
	}{
		{[]string{"application/json"}, ctJSON},
		{[]string{"application/json; charset=utf-8"}, ctJSON},
		{[]string{`APPLICATION/JSON;CHARSET="UTF-8"`}, ctJSON},
		{[]string{" application/json \t; charset=utf-8 "}, ctJSON},
		{nil, ctNotJSON},
		{[]string{""}, ctNotJSON},
		{[]string{"text/plain; charset=utf-8"}, ctNotJSON},
		{[]string{"application/json-seq"}, ctNotJSON},
		{[]string{"application/json; charset=utf-7"}, ctUnsupported},
		{[]string{"application/json; charset=utf8"}, ctUnsupported},
		{[]string{"application/json; charset=utf-8; charset=utf-7"}, ctUnsupported},
		{[]string{"application/json;"}, ctUnsupported},
		{[]string{`application/json; charset="utf-8`}, ctUnsupported},
		{[]string{`application/json; charset=""utf-8""`}, ctUnsupported},
		{[]string{"application/json", "application/json"}, ctUnsupported},
		{[]string{"application/json", "text/plain"}, ctNotJSON},
	}
	for _, c := range cases {
		var hdrs []Header
		for _, v := range c.values {
			hdrs = append(hdrs, Header{"content-type", v})
		}
		if got := contentTypeOf(hdrs); got != c.want {
			t.Errorf("contentTypeOf(%q) = %d, want %d", c.values, got, c.want)
		}
	}
}

// FuzzContentTypeOf: whatever the filter accepts, Go's MIME parser reads as application/json
// with no parameter but charset=utf-8, so no upstream has a charset of its own to honour.
func FuzzContentTypeOf(f *testing.F) {
	for _, s := range []string{"application/json", "application/json; charset=utf-8", `application/json;charset="UTF-8"`,
		"application/json; charset=utf-7", "application/json;;", "application/json; charset=utf-8\x00", "application/json; a=\"b;c\""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if contentTypeOf([]Header{{"content-type", v}}) != ctJSON {
			return
		}
		mt, params, err := mime.ParseMediaType(v)
		if err != nil || mt != "application/json" {
			t.Fatalf("accepted %q: mime reads %q, %v", v, mt, err)
		}
		for k, p := range params {
			if k != "charset" || !strings.EqualFold(p, "utf-8") {
				t.Fatalf("accepted %q with parameter %s=%q", v, k, p)
			}
		}
	})
}

// FuzzSessionUnwrap: a session ID opens only the session it was issued for, under its own key.
func FuzzSessionUnwrap(f *testing.F) {
	for _, s := range []string{"", ".", "up-1", "AAAAAAAAAAAAAAAAAAAAAA.up-1", strings.Repeat("x", 23) + ".y"} {
		f.Add(s, "up-1")
	}
	f.Fuzz(func(t *testing.T, presented, upstream string) {
		alice := newSessionBinding([]byte("alice-key-alice-key-alice-key-32"))
		bob := newSessionBinding([]byte("bob-key-bob-key-bob-key-bob-key-"))
		if upstream != "" {
			w, ok := alice.wrap(upstream)
			if !ok {
				t.Fatal("no wrap with a key")
			}
			if id, ok := alice.unwrap(w); !ok || id != upstream {
				t.Fatalf("own session %q: unwrap %q %v", w, id, ok)
			}
			if _, ok := bob.unwrap(w); ok {
				t.Fatalf("bob opened alice's session %q", w)
			}
		}
		if id, ok := bob.unwrap(presented); ok {
			if w, _ := bob.wrap(id); w != presented {
				t.Fatalf("unwrap(%q) = %q, but its own ID is %q", presented, id, w)
			}
		}
		var none sessionBinding
		if _, ok := none.unwrap(presented); ok {
			t.Fatal("a binding without a key opened a session")
		}
	})
}
