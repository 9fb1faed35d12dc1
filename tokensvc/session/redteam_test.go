package session

// Red-team tests of browser sessions: each performs an attack and checks that it fails.

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/mcpmesh/gateway/shared/checkapi"
	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/tokensvc/secret"
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
	for _, p := range []string{"/", "/mcp", paths.IdPCallback, "/.gatewayx"} {
		if jarHas(b, authnOrigin+p, AuthnCookie) != nil {
			t.Errorf("the authenticate cookie is sent to %s", p)
		}
	}
	// It still does its job: the next host signs in without the provider.
	b.signIn(mcpOrigin, "/.gateway/x", "ignored")
	if e.idp.logins != 1 {
		t.Errorf("provider logins = %d, want 1", e.idp.logins)
	}
}
