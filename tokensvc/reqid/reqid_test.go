package reqid

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestMiddleware_ReusesOnlyWellFormedIDs(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in    string
		reuse bool
	}{
		{"abc-123_x.y", true},
		{strings.Repeat("a", 64), true},
		{strings.Repeat("a", 65), false},
		{"has space", false},
		{"inject\r\nSet-Cookie: x", false},
		{"", false},
	}
	for _, tc := range cases {
		var seen, header string
		h := Middleware(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			seen, header = FromContext(r.Context()), r.Header.Get(Header)
		}))
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Header.Set(Header, tc.in)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		got := rec.Header().Get(Header)
		if (got == tc.in) != tc.reuse || got == "" || seen != got || header != got {
			t.Errorf("%q -> response %q, context %q, request header %q (reuse %v)", tc.in, got, seen, header, tc.reuse)
		}
	}
}

func TestMiddleware_KeepsAnIDAlreadyChosen(t *testing.T) {
	t.Parallel()
	var seen string
	h := Middleware(Middleware(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { seen = FromContext(r.Context()) })))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if seen == "" || rec.Header().Get(Header) != seen {
		t.Fatalf("context %q, response %q", seen, rec.Header().Get(Header))
	}
}

func TestHandler_AddsTheIDOnce(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := slog.New(NewHandler(NewHandler(slog.NewTextHandler(&buf, nil)))).With("x", 1)
	log.InfoContext(NewContext(context.Background(), "id-1"), "hello")
	log.Info("no request")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || strings.Count(lines[0], "request_id=id-1") != 1 || strings.Contains(lines[1], "request_id") {
		t.Fatalf("records:\n%s", buf.String())
	}
}
