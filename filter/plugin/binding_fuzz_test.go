package plugin

import (
	"mime"
	"net/url"
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

func TestEventEnd(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int{
		"event: endpoint\ndata: /m\n\nrest":    len("event: endpoint\ndata: /m\n\n"),
		"event: endpoint\r\ndata: /m\r\n\r\nx": len("event: endpoint\r\ndata: /m\r\n\r\n"),
		"event: endpoint\rdata: /m\r\rx":       len("event: endpoint\rdata: /m\r\r"),
		"\n\n: comment\n\nevent: e\n\n":        len("\n\n: comment\n\nevent: e\n\n"),
		"event: endpoint\ndata: /m\n":          -1,
		"event: endpoint\ndata: /m\r\n\r":      -1,
		"":                                     -1,
	} {
		if got := eventEnd([]byte(in)); got != want {
			t.Errorf("eventEnd(%q) = %d, want %d", in, got, want)
		}
	}
}

// FuzzEndpointEvent: whatever an upstream streams, the filter finds the first event within
// the bytes it holds, and a rewritten endpoint event names exactly one session, the one bound
// to the user, which opens the upstream's session again.
func FuzzEndpointEvent(f *testing.F) {
	for _, s := range []string{"event: endpoint\ndata: /messages?sessionId=abc\n\n", "event:endpoint\r\ndata:/m?a=1&session_id=x%20y\r\n\r\n",
		"event: endpoint\ndata: /m?sessionId=a&sessionid=b\n\n", "data: x\n\n", "event: endpoint\ndata: a\ndata: b\n\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, stream string) {
		end := eventEnd([]byte(stream))
		if end < -1 || end == 0 || end > len(stream) {
			t.Fatalf("eventEnd(%q) = %d", stream, end)
		}
		if end < 0 {
			return
		}
		sb := newSessionBinding([]byte("alice-key-alice-key-alice-key-32"))
		ev, ok := rewriteEndpointEvent([]byte(stream[:end]), &sb)
		if !ok {
			return
		}
		// The data field is a line whose field name is exactly "data" (a line such as
		// "0data:" is another field, which clients ignore).
		var data string
		for _, line := range strings.FieldsFunc(string(ev), func(r rune) bool { return r == '\r' || r == '\n' }) {
			if v, ok := strings.CutPrefix(line, "data:"); ok {
				data = strings.TrimPrefix(v, " ")
				break
			}
		}
		start, stop, n := sessionParam(data)
		if n != 1 {
			t.Fatalf("rewritten event %q names %d sessions", ev, n)
		}
		v, err := url.QueryUnescape(data[start:stop])
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := sb.unwrap(v); !ok {
			t.Fatalf("rewritten event %q: %q does not open the session", ev, v)
		}
	})
}

// FuzzSessionParam: the value found lies inside the query, and no parameter that a server
// would read as a session is missed (a second decoding of every name finds no more).
func FuzzSessionParam(f *testing.F) {
	for _, s := range []string{"/m?sessionId=a", "/m?x=1;session_id=b#frag", "/m?session%49d=c&sessionid=d", "/m", "?=&;"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, uri string) {
		start, end, n := sessionParam(uri)
		if n > 0 && (start < 0 || start > end || end > len(uri) || start <= strings.IndexByte(uri, '?')) {
			t.Fatalf("sessionParam(%q) = %d, %d, %d", uri, start, end, n)
		}
		q := strings.IndexByte(uri, '?')
		if q < 0 {
			return
		}
		query, _, _ := strings.Cut(uri[q+1:], "#")
		count := 0
		for _, pair := range strings.FieldsFunc(query, func(r rune) bool { return r == '&' || r == ';' }) {
			name, _, _ := strings.Cut(pair, "=")
			if dec, err := url.QueryUnescape(name); err == nil && strings.EqualFold(strings.ReplaceAll(dec, "_", ""), "sessionid") {
				count++
			}
		}
		if count > n {
			t.Fatalf("sessionParam(%q) found %d sessions, a decoder finds %d", uri, n, count)
		}
	})
}
