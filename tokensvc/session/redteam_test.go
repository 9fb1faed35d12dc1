package session

// Red-team tests of browser sessions: each performs an attack and checks that it fails.

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/shared/checkapi"
	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/tokensvc/secret"
	"github.com/mcpmesh/gateway/tokensvc/store"
	"github.com/mcpmesh/gateway/tokensvc/store/memory"
	"github.com/mcpmesh/gateway/tokensvc/store/postgres"
	"github.com/mcpmesh/gateway/tokensvc/store/postgres/pgtest"
)

func jarHas(b *browser, rawURL, name string) *http.Cookie {
	u, _ := url.Parse(rawURL)
	for _, c := range b.jar.Cookies(u) {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// Attack: a compromised MCP server upstream collects what the browser sends to its route.
// A user signs in on an MCP server route host to authorize an MCP client; a client that
// shares the browser's cookie store (an embedded webview, an Electron app) then calls the
// MCP URL, and with Path=/ the gateway session cookie of that host goes along. The filter
// does not strip it on mcp.server routes, so the upstream could replay it at the
// authorization endpoint and approve its own client as the user. On a host that serves
// only mcp.server routes the cookie is needed by gateway paths alone: it must not be sent
// anywhere else.
func TestRedTeam_SessionCookieOfMCPServerHostStaysOnGatewayPaths(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b := e.browser()
	b.signIn(mcpOrigin, paths.Authorize+"?client_id=x", "alice")
	if jarHas(b, mcpOrigin+paths.Authorize, checkapi.SessionCookie) == nil {
		t.Fatal("no session cookie for the authorization endpoint")
	}
	for _, p := range []string{"/mcp", "/", "/mcp/.gateway/", "/.gatewayx"} {
		if c := jarHas(b, mcpOrigin+p, checkapi.SessionCookie); c != nil {
			t.Errorf("the browser sends the MCP host's session cookie to %s (an MCP server upstream sees it)", p)
		}
	}
	if sub, _ := b.whoami(mcpOrigin); sub != "alice" {
		t.Errorf("gateway paths on the mcp host: signed in as %q, want alice", sub)
	}
	// Hosts with browser routes need the cookie everywhere.
	b.signIn(appOrigin, "/", "alice")
	if jarHas(b, appOrigin+"/dash", checkapi.SessionCookie) == nil {
		t.Error("app host: no session cookie on the application's paths")
	}
}

// A host that gains a browser route after its users signed in has their cookies on
// /.gateway/ only: the filter then sees no cookie and sends the browser to sign in, which
// must move the cookie to / (and drop the old one) instead of bouncing back forever.
func TestRedTeam_SignInMovesACookieOfTheWrongPath(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b := e.browser()
	b.signIn(appOrigin, "/", "alice")
	old := b.cookie(appOrigin, checkapi.SessionCookie)
	// Rewrite the browser's cookie as a server-only host would have set it.
	u, _ := url.Parse(appOrigin)
	b.jar.SetCookies(u, []*http.Cookie{{Name: checkapi.SessionCookie, Value: "", Path: "/", MaxAge: -1}})
	b.jar.SetCookies(u, []*http.Cookie{{Name: checkapi.SessionCookie, Value: old.Value, Path: "/.gateway/"}})
	if jarHas(b, appOrigin+"/dash", checkapi.SessionCookie) != nil {
		t.Fatal("setup: cookie still on /")
	}
	if _, end := b.follow(appOrigin + paths.SignIn + "?return_to=/dash"); end != appOrigin+"/dash" {
		t.Fatalf("sign-in ended at %s", end)
	}
	c := jarHas(b, appOrigin+"/dash", checkapi.SessionCookie)
	if c == nil {
		t.Fatal("after sign-in the application's paths still get no session cookie")
	}
	// Exactly one cookie of that name reaches gateway paths: the new one.
	n := 0
	gu, _ := url.Parse(appOrigin + "/.gateway/x")
	for _, gc := range b.jar.Cookies(gu) {
		if gc.Name == checkapi.SessionCookie {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d session cookies reach gateway paths, want 1", n)
	}
	if _, _, err := e.store.GetBrowserCookie(context.Background(), secret.Hash(old.Value), "app.example.com", e.clock.now()); err == nil {
		t.Error("the replaced cookie is still valid")
	}
}

// Attack: sign-out must clear the cookie wherever the host puts it, so that a shared
// computer does not keep sending a dead (or, after a path change, a live) cookie.
func TestRedTeam_SignOutClearsTheCookieOnBothPaths(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b := e.browser()
	b.signIn(mcpOrigin, "/.gateway/x", "alice")
	_, csrf := b.whoami(mcpOrigin)
	resp := b.do(http.MethodPost, mcpOrigin+paths.SignOut, url.Values{"csrf_token": {csrf}})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("sign-out: %d", resp.StatusCode)
	}
	cleared := map[string]bool{}
	for _, c := range resp.Cookies() {
		if c.Name == checkapi.SessionCookie && c.MaxAge < 0 {
			cleared[c.Path] = true
		}
	}
	if !cleared["/"] || !cleared[paths.Prefix] {
		t.Errorf("sign-out cleared the session cookie on %v, want / and %s", cleared, paths.Prefix)
	}
	if sub, _ := b.whoami(mcpOrigin); sub != "" {
		t.Errorf("still signed in as %q after sign-out", sub)
	}
}

// Attack: the authenticate host's session cookie is the master key (it signs the browser
// in on every route host without the provider). With Path=/ it travels with every request
// to that host name, and cookies ignore ports: where the authenticate service shares a host
// name with route hosts (the local gateway on 127.0.0.1 with several ports, for one), an
// MCP server upstream on such a route would receive it. It is needed on the authenticate
// sign-in path alone.
func TestRedTeam_AuthenticateCookieStaysOnItsSignInPath(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b := e.browser()
	b.signIn(appOrigin, "/", "alice")
	if jarHas(b, authnOrigin+paths.AuthenticateSignIn, AuthnCookie) == nil {
		t.Fatal("no authenticate cookie on the sign-in path")
	}
	for _, p := range []string{"/", "/mcp", paths.IDPCallback, "/.gatewayx"} {
		if jarHas(b, authnOrigin+p, AuthnCookie) != nil {
			t.Errorf("the authenticate cookie is sent to %s", p)
		}
	}
	// It still does its job: the next host signs in without the provider.
	b.signIn(mcpOrigin, "/.gateway/x", "ignored")
	if e.idp.Logins() != 1 {
		t.Errorf("provider logins = %d, want 1", e.idp.Logins())
	}
}

// Attack: the hand-over code is spent before its bindings are checked. Whoever sees a
// victim's hand-over link (a shared screen, a proxy log, a browser extension) opens it first
// in another browser, or on another route host: that attempt is refused, but it burnt the
// code, so the victim's own sign-in then fails. A refused attempt must leave the code to the
// browser it was minted for; it stays single use.
func TestRedTeam_ForeignHandoffAttemptDoesNotBurnTheVictimsCode(t *testing.T) {
	t.Parallel()
	for name, foreign := range map[string]func(e *env, handoffURL string) *http.Response{
		"another browser": func(e *env, handoffURL string) *http.Response {
			return e.browser().do(http.MethodGet, handoffURL, nil)
		},
		"another route host": func(e *env, handoffURL string) *http.Response {
			u, _ := url.Parse(handoffURL)
			return e.browser().do(http.MethodGet, mcpOrigin+paths.Handoff+"?"+u.RawQuery, nil)
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			victim := e.browser()
			_, at := victim.follow(appOrigin + paths.SignIn + "?return_to=/dash")
			cb := victim.do(http.MethodGet, e.idp.Login(t, at, "alice"), nil)
			handoffURL := cb.Header.Get("Location")
			if resp := foreign(e, handoffURL); resp.StatusCode != http.StatusForbidden && resp.StatusCode != http.StatusBadRequest {
				t.Fatalf("foreign attempt: status %d, want a refusal", resp.StatusCode)
			}
			resp := victim.do(http.MethodGet, handoffURL, nil)
			if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/dash" {
				t.Fatalf("victim's own hand-over after a foreign attempt: status %d Location %q, want 303 to /dash", resp.StatusCode, resp.Header.Get("Location"))
			}
			if sub, _ := victim.whoami(appOrigin); sub != "alice" {
				t.Fatalf("victim signed in as %q, want alice", sub)
			}
			if resp := victim.do(http.MethodGet, handoffURL, nil); resp.StatusCode != http.StatusBadRequest {
				t.Errorf("replayed hand-over: status %d, want 400 (single use)", resp.StatusCode)
			}
		})
	}
}

// Attack: the browser that owns a hand-over code fires it many times at once, at one replica
// or at two sharing a PostgreSQL database (GATEWAY_TEST_POSTGRES_DSN; skipped without),
// hoping for several session cookies from one code. Exactly one may win.
func TestRedTeam_ConcurrentHandoffRedeemsOnce(t *testing.T) {
	t.Parallel()
	for name, replicas := range map[string]func(t *testing.T) (*env, *env){
		"one replica": func(t *testing.T) (*env, *env) { e := newEnv(t); return e, e },
		"two replicas on postgres": func(t *testing.T) (*env, *env) {
			dsn := pgtest.DSN(t)
			open := func() store.Store {
				st, err := postgres.New(t.Context(), dsn)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { st.Close() })
				return st
			}
			provider, clk := newFakeIDP(), &clock{t: time.Now()}
			return newEnvOn(t, open(), provider, clk), newEnvOn(t, open(), provider, clk)
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			a, b := replicas(t)
			br := a.browser()
			_, at := br.follow(appOrigin + paths.SignIn + "?return_to=/")
			handoffURL := br.do(http.MethodGet, a.idp.Login(t, at, "alice"), nil).Header.Get("Location")
			const n = 16
			var wg sync.WaitGroup
			codes := make([]int, n)
			start := make(chan struct{})
			for i := range n {
				replica := []*env{a, b}[i%2]
				wg.Go(func() {
					<-start
					req := httptest.NewRequest(http.MethodGet, handoffURL, nil)
					for _, c := range br.jar.Cookies(req.URL) {
						req.AddCookie(c)
					}
					rec := httptest.NewRecorder()
					replica.handler.ServeHTTP(rec, req)
					codes[i] = rec.Code
				})
			}
			close(start)
			wg.Wait()
			wins := 0
			for _, c := range codes {
				switch c {
				case http.StatusSeeOther:
					wins++
				case http.StatusBadRequest:
				default:
					t.Errorf("unexpected status %d", c)
				}
			}
			if wins != 1 {
				t.Fatalf("%d concurrent hand-overs succeeded, want exactly 1 (%v)", wins, codes)
			}
		})
	}
}

// countingStore counts the writes the session manager makes (taking a one-time value deletes
// it: a write too).
type countingStore struct {
	store.Store
	mu     sync.Mutex
	writes map[string]int
}

func newCountingStore() *countingStore {
	return &countingStore{Store: memory.New(), writes: map[string]int{}}
}

func (c *countingStore) count(op string) {
	c.mu.Lock()
	c.writes[op]++
	c.mu.Unlock()
}

func (c *countingStore) total() (int, map[string]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, m := 0, map[string]int{}
	for k, v := range c.writes {
		n += v
		m[k] = v
	}
	return n, m
}

func (c *countingStore) PutOneTime(ctx context.Context, v store.OneTime) error {
	c.count("PutOneTime")
	return c.Store.PutOneTime(ctx, v)
}

func (c *countingStore) TakeOneTime(ctx context.Context, hash []byte, kind string, now time.Time) (store.OneTime, error) {
	c.count("TakeOneTime")
	return c.Store.TakeOneTime(ctx, hash, kind, now)
}

func (c *countingStore) CreateSession(ctx context.Context, s store.Session) error {
	c.count("CreateSession")
	return c.Store.CreateSession(ctx, s)
}

func (c *countingStore) CreateBrowserCookie(ctx context.Context, bc store.BrowserCookie) error {
	c.count("CreateBrowserCookie")
	return c.Store.CreateBrowserCookie(ctx, bc)
}

func (c *countingStore) DeleteBrowserCookie(ctx context.Context, hash []byte) error {
	c.count("DeleteBrowserCookie")
	return c.Store.DeleteBrowserCookie(ctx, hash)
}

// Attack: anonymous sign-in starts fill the store. Every GET of a route host's sign_in (or
// of a page that redirects there) from a browser without cookies stored a 10-minute row,
// and the authenticate host stored another for the provider's state: a script grows the
// database without bound and keeps SQLite's single writer busy. Nothing a browser can do
// before it has signed in at the provider may write to the store: not starting sign-in on
// a route host, not following on to the authenticate host, not coming back to the callback
// with a made-up code.
func TestRedTeam_AnonymousSignInStartsWriteNothing(t *testing.T) {
	t.Parallel()
	cs := newCountingStore()
	e := newEnvOn(t, cs, newFakeIDP(), &clock{t: time.Unix(1_700_000_000, 0)})
	for i := range 200 {
		b := e.browser()
		start := appOrigin + paths.SignIn + "?return_to=/x"
		if i%2 == 1 {
			start = mcpOrigin + "/.gateway/protected?client_id=c" // RedirectToSignIn
		}
		_, at := b.follow(start)
		if !strings.HasPrefix(at, idpAuthURL) {
			t.Fatalf("start %d did not reach the provider: %s", i, at)
		}
		u, _ := url.Parse(at)
		forged := authnOrigin + paths.IDPCallback + "?code=made-up&state=" + url.QueryEscape(u.Query().Get("state"))
		if resp := b.do(http.MethodGet, forged, nil); resp.StatusCode < 400 {
			t.Fatalf("callback with a made-up code: status %d", resp.StatusCode)
		}
	}
	if n, ops := cs.total(); n != 0 {
		t.Fatalf("200 anonymous sign-in starts wrote %d times to the store (%v), want 0", n, ops)
	}
	// Real sign-ins still work and write what a session needs.
	b := e.browser()
	if end := b.signIn(appOrigin, "/dash", "alice"); end != appOrigin+"/dash" {
		t.Fatalf("sign-in ended at %s", end)
	}
	if sub, _ := b.whoami(appOrigin); sub != "alice" {
		t.Fatalf("signed in as %q, want alice", sub)
	}
}

// Attack: the sign-in state now lives in the browser, so an attacker holds it and tries to
// bend it: flip bytes, move it to the other step, or use it after it expired. Each is refused,
// and none reaches the provider's token endpoint.
func TestRedTeam_SignInStateCannotBeForgedMovedOrReused(t *testing.T) {
	t.Parallel()
	flip := func(s string) string {
		b := []byte(s)
		i := len(b) / 2
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		return string(b)
	}
	for name, tc := range map[string]struct {
		// bend gets the route host's state and the provider's state; it returns the URL to
		// open in the attacker's browser, after wait has passed.
		bend func(signIn, idp string) string
		wait time.Duration
	}{
		"route host state tampered": {bend: func(signIn, _ string) string {
			return authnOrigin + paths.AuthenticateSignIn + "?state=" + url.QueryEscape(flip(signIn))
		}},
		"provider state tampered": {bend: func(_, idp string) string {
			return authnOrigin + paths.IDPCallback + "?code=code-1&state=" + url.QueryEscape(flip(idp))
		}},
		"route host state at the callback": {bend: func(signIn, _ string) string {
			return authnOrigin + paths.IDPCallback + "?code=code-1&state=" + url.QueryEscape(signIn)
		}},
		"provider state at the authenticate host": {bend: func(_, idp string) string {
			return authnOrigin + paths.AuthenticateSignIn + "?state=" + url.QueryEscape(idp)
		}},
		"route host state expired": {wait: signInLifetime, bend: func(signIn, _ string) string {
			return authnOrigin + paths.AuthenticateSignIn + "?state=" + url.QueryEscape(signIn)
		}},
		"provider state expired": {wait: signInLifetime, bend: func(_, idp string) string {
			return authnOrigin + paths.IDPCallback + "?code=code-1&state=" + url.QueryEscape(idp)
		}},
		"oversized state": {bend: func(_, _ string) string {
			return authnOrigin + paths.IDPCallback + "?code=code-1&state=" + strings.Repeat("A", maxStateLen+1)
		}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			b := e.browser()
			first := b.do(http.MethodGet, appOrigin+paths.SignIn+"?return_to=/x", nil)
			loc, _ := url.Parse(first.Header.Get("Location"))
			_, at := b.follow(loc.String())
			u, _ := url.Parse(at)
			e.idp.Login(t, at, "alice") // the provider issued code-1 for this state
			e.clock.add(tc.wait)
			resp := b.do(http.MethodGet, tc.bend(loc.Query().Get("state"), u.Query().Get("state")), nil)
			if resp.StatusCode != http.StatusBadRequest {
				t.Fatalf("status %d, want 400", resp.StatusCode)
			}
			if !e.idp.Outstanding("code-1") {
				t.Error("the provider's code was redeemed")
			}
			if c := b.cookie(authnOrigin+paths.AuthenticateSignIn, AuthnCookie); c != nil {
				t.Error("the browser got an authenticate session")
			}
		})
	}
}

// Attack: a completed sign-in's callback URL (state and code, say from the browser history)
// is opened again in the same browser, at a provider that does not enforce single-use codes.
// The state cannot be spent in the browser; the service remembers that it completed.
func TestRedTeam_CompletedSignInStateIsNotReplayable(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.idp.ReusableCodes = true
	b := e.browser()
	_, at := b.follow(appOrigin + paths.SignIn + "?return_to=/x")
	callback := e.idp.Login(t, at, "alice")
	if resp := b.do(http.MethodGet, callback, nil); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("first callback: status %d", resp.StatusCode)
	}
	if resp := b.do(http.MethodGet, callback, nil); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("replayed callback: status %d, want 400", resp.StatusCode)
	}
	// Racing callbacks of a fresh sign-in: exactly one completes.
	b = e.browser()
	_, at = b.follow(mcpOrigin + paths.SignIn + "?return_to=/y")
	callback = e.idp.Login(t, at, "alice")
	var wg sync.WaitGroup
	var mu sync.Mutex
	completed := 0
	for range 8 {
		wg.Go(func() {
			req := httptest.NewRequest(http.MethodGet, callback, nil)
			for _, c := range b.jar.Cookies(req.URL) {
				req.AddCookie(c)
			}
			rec := httptest.NewRecorder()
			e.handler.ServeHTTP(rec, req)
			if rec.Code == http.StatusSeeOther {
				mu.Lock()
				completed++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if completed != 1 {
		t.Fatalf("%d of 8 racing callbacks completed the sign-in, want exactly 1", completed)
	}
}
