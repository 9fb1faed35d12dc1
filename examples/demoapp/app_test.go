package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	tsassertion "github.com/mcpmesh/gateway/tokensvc/assertion"
)

// fakeGateway serves the JWKS and the route listing the app reads; it counts listing calls
// and tool calls (the LLM API stand-in's endpoint is served by it too).
type fakeGateway struct {
	srv            *httptest.Server
	signer         *tsassertion.Signer
	listings, llms atomic.Int32
	listing        string
}

func newFakeGateway(t *testing.T) *fakeGateway {
	t.Helper()
	g := &fakeGateway{listing: `{"servers":[{"name":"Demo <script>alert(1)</script>","url":"http://127.0.0.2:8401/mcp","connected":false},{"name":"odd","url":"javascript:alert(1)","connected":false}]}`}
	var err error
	g.signer, err = tsassertion.NewFromSeed([]byte("demoapp test seed, 32 bytes long!"), "http://auth.test")
	if err != nil {
		t.Fatal(err)
	}
	g.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/.well-known/gateway/jwks.json":
			g.signer.ServeHTTP(w, r)
		case routesPath:
			g.listings.Add(1)
			if r.Header.Get("Authorization") != "Bearer the-te" {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			io.WriteString(w, g.listing)
		case "/v1/tool-call":
			g.llms.Add(1)
			io.WriteString(w, `{"ok":true,"text":"done"}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(g.srv.Close)
	return g
}

// newTestApp returns the app as the fake gateway's mcp.client route.
func newTestApp(t *testing.T, g *fakeGateway) *app {
	t.Helper()
	a, err := newApp(options{Gateway: g.srv.URL, Issuer: "http://auth.test", LLMAPI: g.srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// request is a request as the gateway forwards it: with a signed assertion for the app's host
// and the TE.
func (g *fakeGateway) request(t *testing.T, method, target, body string) *http.Request {
	t.Helper()
	u, _ := url.Parse(g.srv.URL)
	jwt, _, err := g.signer.Sign(u.Host, tsassertion.Identity{Subject: "alice", Email: "alice@example.com", Name: "Alice <Example>"}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest(method, g.srv.URL+target, strings.NewReader(body))
	r.Header.Set("X-Gateway-Assertion", jwt)
	r.Header.Set("Authorization", "Bearer the-te")
	if method == http.MethodPost {
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	return r
}

func serve(a *app, r *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	a.routes().ServeHTTP(rec, r)
	return rec
}

func TestApp_RefusesARequestWithoutAValidAssertion(t *testing.T) {
	g := newFakeGateway(t)
	a := newTestApp(t, g)
	other, _ := tsassertion.NewFromSeed([]byte("another gateway's seed, 32 bytes"), "http://auth.test")
	u, _ := url.Parse(g.srv.URL)
	forged, _, _ := other.Sign(u.Host, tsassertion.Identity{Subject: "mallory", Email: "mallory@example.com"}, time.Time{})
	wrongAud, _, _ := g.signer.Sign("other.host", tsassertion.Identity{Subject: "alice"}, time.Time{})
	for name, jwt := range map[string]string{
		"none":           "",
		"alg none":       "eyJhbGciOiJub25lIn0.eyJzdWIiOiJtYWxsb3J5IiwiZW1haWwiOiJtYWxsb3J5QGV4YW1wbGUuY29tIn0.",
		"another key":    forged,
		"other audience": wrongAud,
	} {
		for _, method := range []string{http.MethodGet, http.MethodPost} {
			target := "/"
			if method == http.MethodPost {
				target = "/call"
			}
			r := g.request(t, method, target, "csrf=x&server=http://127.0.0.2:8401/mcp&tool=echo")
			r.Header.Set("X-Gateway-Assertion", jwt)
			rec := serve(a, r)
			if rec.Code != http.StatusUnauthorized || strings.Contains(rec.Body.String(), "mallory") {
				t.Errorf("%s %s: %d %q, want 401", name, method, rec.Code, rec.Body.String())
			}
		}
	}
	if n := g.listings.Load() + g.llms.Load(); n != 0 {
		t.Fatalf("the app used the TE of unverified requests %d times", n)
	}
}

func TestApp_PageEscapesAndLinks(t *testing.T) {
	g := newFakeGateway(t)
	a := newTestApp(t, g)
	rec := serve(a, g.request(t, http.MethodGet, "/", ""))
	body := rec.Body.String()
	if rec.Code != http.StatusOK {
		t.Fatalf("%d %s", rec.Code, body)
	}
	for _, bad := range []string{"<script>alert", "Alice <Example>", `href="javascript:`} {
		if strings.Contains(body, bad) {
			t.Errorf("the page contains %q unescaped", bad)
		}
	}
	want := `href="http://127.0.0.2:8401/.gateway/mcp/connect?redirect_url=` + url.QueryEscape(g.srv.URL+"/") + "&route=" + url.QueryEscape("http://127.0.0.2:8401/mcp") + `"`
	if !strings.Contains(body, strings.ReplaceAll(want, "&", "&amp;")) {
		t.Errorf("the page has no Connect link %s:\n%s", want, body)
	}
	if strings.Contains(body, "the-te") {
		t.Error("the page shows the TE")
	}
}

func TestApp_ToolFormIsCSRFProtected(t *testing.T) {
	g := newFakeGateway(t)
	a := newTestApp(t, g)
	good := "csrf=" + a.csrf.token("alice") + "&server=" + url.QueryEscape("http://127.0.0.2:8401/mcp") + "&tool=echo&arguments=%7B%7D"
	for _, tt := range []struct {
		name, body     string
		header, value  string
		wantCode       int
		wantLLMReached bool
	}{
		{"same-origin with the token", good, "Sec-Fetch-Site", "same-origin", 200, true},
		{"no token", strings.Replace(good, "csrf=", "x=", 1), "", "", 403, false},
		{"another user's token", "csrf=" + a.csrf.token("bob") + good[strings.Index(good, "&"):], "", "", 403, false},
		{"cross-site", good, "Sec-Fetch-Site", "cross-site", 403, false},
		{"same-site", good, "Sec-Fetch-Site", "same-site", 403, false},
		{"another origin", good, "Origin", "http://evil.test", 403, false},
		{"opaque origin", good, "Origin", "null", 403, false},
		{"a server not listed", strings.Replace(good, "8401", "9999", 1), "", "", 400, false},
	} {
		before := g.llms.Load()
		r := g.request(t, http.MethodPost, "/call", tt.body)
		if tt.header != "" {
			r.Header.Set(tt.header, tt.value)
		}
		rec := serve(a, r)
		reached := g.llms.Load() > before
		if rec.Code != tt.wantCode || reached != tt.wantLLMReached {
			t.Errorf("%s: %d, stand-in reached %v; want %d, %v", tt.name, rec.Code, reached, tt.wantCode, tt.wantLLMReached)
		}
	}
}
