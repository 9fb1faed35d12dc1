package session

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/tokensvc/hosts"
	"github.com/mcpmesh/gateway/tokensvc/idp/idptest"
	"github.com/mcpmesh/gateway/tokensvc/store"
	"github.com/mcpmesh/gateway/tokensvc/store/memory"
)

const (
	authnOrigin = "https://auth.example.com"
	appOrigin   = "https://app.example.com"
	mcpOrigin   = "https://mcp.example.com"
	idpAuthURL  = idptest.AuthURL
)

// newFakeIDP returns the fake provider, which redirects back to the authenticate host.
func newFakeIDP() *idptest.Connector {
	return idptest.New(authnOrigin + paths.IDPCallback)
}

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// env is a Manager on a memory store, with the authenticate host, an mcp.client app host
// and an mcp.server host.
type env struct {
	t       *testing.T
	cfg     *config.Config
	store   store.Store
	idp     *idptest.Connector
	clock   *clock
	m       *Manager
	handler http.Handler
}

func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvOn(t, memory.New(), newFakeIDP(), &clock{t: time.Unix(1_700_000_000, 0)})
}

// newEnvOn is newEnv on st with provider and clock; two envs on one store, provider and clock
// are two replicas of the token service.
func newEnvOn(t *testing.T, st store.Store, provider *idptest.Connector, clk *clock) *env {
	t.Helper()
	cfg := &config.Config{
		RuntimeFlags:           map[string]bool{"mcp": true},
		AuthenticateServiceURL: authnOrigin,
		SharedSecret:           base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef")),
		CookieSecret:           base64.StdEncoding.EncodeToString([]byte("fedcba9876543210fedcba9876543210")),
		CookieExpiration:       config.Duration(time.Hour),
		Routes: []config.Route{
			{From: appOrigin, To: "http://app.internal", MCP: &config.MCP{Client: &config.MCPClient{}}},
			{From: mcpOrigin + "/mcp", To: "http://mcp.internal", MCP: &config.MCP{Server: &config.MCPServer{}}},
		},
	}
	e := &env{t: t, cfg: cfg, store: st, idp: provider, clock: clk}
	table := hosts.NewTable(cfg)
	m, err := New(cfg, e.store, e.idp, table, WithClock(e.clock.now))
	if err != nil {
		t.Fatal(err)
	}
	e.m = m
	mux := http.NewServeMux()
	// The endpoints with their methods; which host serves which is the router's business
	// (tokensvc/server routes.go, tested there).
	mux.HandleFunc("GET "+paths.SignIn, m.SignIn)
	mux.HandleFunc("GET "+paths.Handoff, m.Handoff)
	mux.HandleFunc("GET "+paths.SignOut, m.SignOutPage)
	mux.HandleFunc("POST "+paths.SignOut, m.SignOut)
	mux.HandleFunc("GET "+paths.AuthenticateSignIn, m.AuthenticateSignIn)
	mux.HandleFunc("GET "+paths.IDPCallback, m.Callback)
	mux.HandleFunc("POST "+paths.IDPCallback, m.Callback)
	// Pages needing the session live under /.gateway/, as on a host that serves only
	// mcp.server routes the session cookie reaches gateway paths alone.
	mux.HandleFunc("/.gateway/whoami", func(w http.ResponseWriter, r *http.Request) {
		s, err := m.Current(r)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		if s == nil {
			http.Error(w, "signed out", http.StatusUnauthorized)
			return
		}
		fmt.Fprintf(w, "%s %s", s.Subject, m.CSRFToken(r))
	})
	mux.HandleFunc("/.gateway/protected", func(w http.ResponseWriter, r *http.Request) {
		if s, _ := m.Current(r); s == nil {
			m.RedirectToSignIn(w, r, r.URL.RequestURI())
			return
		}
		io.WriteString(w, "secret page")
	})
	e.handler = table.Middleware(mux)
	return e
}

// browser is a user agent with a cookie jar that talks to env's handler in-process.
type browser struct {
	e   *env
	jar *cookiejar.Jar
}

func (e *env) browser() *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{e: e, jar: jar}
}

// do sends one request and returns the response (redirects not followed).
func (b *browser) do(method, rawURL string, form url.Values) *http.Response {
	b.e.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req := httptest.NewRequest(method, rawURL, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for _, c := range b.jar.Cookies(req.URL) {
		req.AddCookie(c)
	}
	rec := httptest.NewRecorder()
	b.e.handler.ServeHTTP(rec, req)
	resp := rec.Result()
	b.jar.SetCookies(req.URL, resp.Cookies())
	return resp
}

// follow GETs rawURL and follows redirects on the gateway's hosts. It stops at the provider
// (returning its URL) or at a non-redirect response.
func (b *browser) follow(rawURL string) (*http.Response, string) {
	b.e.t.Helper()
	u, _ := url.Parse(rawURL)
	for range 10 {
		resp := b.do(http.MethodGet, u.String(), nil)
		if resp.StatusCode < 300 || resp.StatusCode > 399 {
			return resp, u.String()
		}
		next, err := u.Parse(resp.Header.Get("Location"))
		if err != nil {
			b.e.t.Fatalf("bad Location %q", resp.Header.Get("Location"))
		}
		if strings.HasPrefix(next.String(), idpAuthURL) {
			return resp, next.String()
		}
		u = next
	}
	b.e.t.Fatal("redirect loop")
	return nil, ""
}

// signIn signs the browser in on origin as subject and returns the final URL.
func (b *browser) signIn(origin, returnTo, subject string) string {
	b.e.t.Helper()
	_, at := b.follow(origin + paths.SignIn + "?return_to=" + url.QueryEscape(returnTo))
	if strings.HasPrefix(at, idpAuthURL) {
		_, at = b.follow(b.e.idp.Login(b.e.t, at, subject))
	}
	return at
}

// whoami returns the subject signed in on origin, or "".
func (b *browser) whoami(origin string) (subject, csrf string) {
	resp := b.do(http.MethodGet, origin+"/.gateway/whoami", nil)
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return "", ""
	}
	subject, csrf, _ = strings.Cut(string(body), " ")
	return subject, csrf
}

func (b *browser) cookie(origin, name string) *http.Cookie {
	u, _ := url.Parse(origin)
	for _, c := range b.jar.Cookies(u) {
		if c.Name == name {
			return c
		}
	}
	return nil
}

func mustSession(t *testing.T, st store.Store, id string) store.Session {
	t.Helper()
	s, err := st.GetSession(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var errTransient = errors.New("connection refused")

func hostsWithHost(r *http.Request, h *hosts.Host) context.Context {
	return hosts.WithHost(r.Context(), h)
}

func (b *browser) reqNoCookie(origin string) *http.Request {
	r, _ := http.NewRequest(http.MethodPost, origin+"/", nil)
	u, _ := url.Parse(origin)
	return r.WithContext(hosts.WithHost(r.Context(), b.e.m.hosts.Lookup(u.Host)))
}
