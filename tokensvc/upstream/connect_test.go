package upstream

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/mcpmesh/gateway/shared/paths"
)

func TestConnect_FlowStoresTheTIAndRedirects(t *testing.T) {
	t.Parallel()
	for _, style := range []string{"header", "params", ""} {
		t.Run("auth_style="+style, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, style, nil)
			sid := e.session("alice", "alice@example.com")
			ok, _ := e.svc.Connected(context.Background(), "alice", routeID)
			if ok {
				t.Fatal("connected before connecting")
			}
			rec := e.connect(sid)
			if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != appURL {
				t.Fatalf("callback: %d %q %s", rec.Code, rec.Header().Get("Location"), rec.Body.String())
			}
			ti, _, err := e.svc.Token(context.Background(), "alice", routeID)
			if err != nil || !strings.HasPrefix(ti, "at-1-upstream-alice-") {
				t.Fatalf("Token = %q, %v", ti, err)
			}
			if ok, _ := e.svc.Connected(context.Background(), "alice", routeID); !ok {
				t.Error("not connected after connecting")
			}
			// Another user has no TI.
			if _, _, err := e.svc.Token(context.Background(), "bob", routeID); err == nil {
				t.Error("bob got a TI")
			}
			e.assertNoLeak(rec.Body.String(), rec.Header().Get("Location"))
		})
	}
}

func TestConnect_StrictProviderRefusesTheOtherStyle(t *testing.T) {
	t.Parallel()
	// The provider takes only Basic; the route says params: the exchange fails, and says so.
	e := newEnv(t, "params", nil)
	e.p.style = "header"
	sid := e.session("alice", "alice@example.com")
	rec := e.connect(sid)
	if rec.Code != http.StatusBadGateway || !strings.Contains(rec.Body.String(), "invalid_client") {
		t.Fatalf("callback: %d %s", rec.Code, rec.Body.String())
	}
	if ok, _ := e.svc.Connected(context.Background(), "alice", routeID); ok {
		t.Error("connected although the exchange failed")
	}
	e.assertNoLeak(rec.Body.String())
}

func TestConnect_WithoutSessionSignsInFirst(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "header", nil)
	rec := e.do("GET", "https://up.example.com"+paths.Connect+"?redirect_url="+url.QueryEscape(appURL), "", nil, nil)
	loc := rec.Header().Get("Location")
	if rec.Code != http.StatusFound || !strings.HasPrefix(loc, paths.SignIn+"?return_to=") {
		t.Fatalf("%d %q", rec.Code, loc)
	}
	ret, _ := url.Parse(loc)
	if rt := ret.Query().Get("return_to"); !strings.HasPrefix(rt, paths.Connect+"?redirect_url=") {
		t.Errorf("return_to = %q", rt)
	}
}

func TestConnect_RedirectURLMustBeAnMCPClientRoute(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "header", nil)
	sid := e.session("alice", "alice@example.com")
	bad := []string{
		"", "https://evil.example.com/", "https://app.example.com.evil.com/", "https://evil.com/?https://app.example.com",
		"https://app.example.com@evil.com/", "//app.example.com/", "/after", "javascript:alert(1)//app.example.com",
		"http://app.example.com/", "https://app.example.com:444/", "https://app.example.com\\@evil.com/",
		"https://APP.example.com%2eevil.com/", "https://app.example.com%00.evil.com/", "data:text/html,hi",
		"https://up.example.com/mcp", "https:/app.example.com/", "HTTPS://evil.com/",
	}
	for _, target := range []string{paths.Connect, paths.Disconnect} {
		for _, r := range bad {
			rec := e.do("GET", "https://up.example.com"+target+"?redirect_url="+url.QueryEscape(r), sid, nil, nil)
			if rec.Code != http.StatusBadRequest || rec.Header().Get("Location") != "" {
				t.Errorf("%s redirect_url=%q: %d Location %q", target, r, rec.Code, rec.Header().Get("Location"))
			}
		}
		rec := e.do("GET", "https://up.example.com"+target+"?redirect_url="+url.QueryEscape(appURL)+"&redirect_url="+url.QueryEscape(appURL), sid, nil, nil)
		if rec.Code != http.StatusBadRequest {
			t.Errorf("%s two redirect_urls: %d", target, rec.Code)
		}
	}
	// Accepted forms, normalised: upper-case host, trailing dot, default port.
	for _, good := range []string{"https://app.example.com/after?x=1", "https://APP.example.com./", "https://app.example.com:443/p"} {
		if _, ok := CheckRedirectURL(good, e.svc.clientOrigins); !ok {
			t.Errorf("%q refused", good)
		}
	}
}

func TestConnect_RouteParameter(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "header", nil)
	sid := e.session("alice", "alice@example.com")
	base := "https://up.example.com" + paths.Connect + "?redirect_url=" + url.QueryEscape(appURL)
	for _, r := range []string{"https://up.example.com/other", "https://app.example.com", "nope"} {
		if rec := e.do("GET", base+"&route="+url.QueryEscape(r), sid, nil, nil); rec.Code != http.StatusBadRequest {
			t.Errorf("route=%q: %d", r, rec.Code)
		}
	}
	if rec := e.do("GET", base+"&route="+url.QueryEscape(routeID), sid, nil, nil); rec.Code != http.StatusSeeOther ||
		!strings.HasPrefix(rec.Header().Get("Location"), e.p.srv.URL+"/authorize?") {
		t.Errorf("route=%s: %d %q", routeID, rec.Code, rec.Header().Get("Location"))
	}
	// A user the route's policy refuses cannot connect it.
	denied := e.session("dan", "denied@example.com")
	if rec := e.do("GET", base+"&route="+url.QueryEscape(routeID), denied, nil, nil); rec.Code != http.StatusForbidden {
		t.Errorf("denied user with route=: %d", rec.Code)
	}
	if rec := e.do("GET", base, denied, nil, nil); rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != appURL {
		t.Errorf("denied user: %d %q, want straight back", rec.Code, rec.Header().Get("Location"))
	}
}

func TestConnect_AuthorizationRequest(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "header", nil)
	sid := e.session("alice", "alice@example.com")
	rec := e.do("GET", "https://up.example.com"+paths.Connect+"?redirect_url="+url.QueryEscape(appURL), sid, nil, nil)
	u, _ := url.Parse(rec.Header().Get("Location"))
	q := u.Query()
	want := map[string]string{
		"response_type": "code", "client_id": "gw-client", "redirect_uri": "https://up.example.com/.gateway/mcp/oauth2/callback",
		"code_challenge_method": "S256", "scope": "read write",
	}
	for k, v := range want {
		if q.Get(k) != v {
			t.Errorf("%s = %q, want %q", k, q.Get(k), v)
		}
	}
	if len(q.Get("state")) < 40 || len(q.Get("code_challenge")) != 43 {
		t.Errorf("state %q, challenge %q", q.Get("state"), q.Get("code_challenge"))
	}
	if strings.Contains(u.RawQuery, e.p.secret) {
		t.Error("the client secret is in the authorization URL")
	}
}

func TestCallback_StateOfAnotherSessionIsRefusedAndNotSpent(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "header", nil)
	alice := e.session("alice", "alice@example.com")
	mallory := e.session("mallory", "mallory@example.com")
	rec := e.do("GET", "https://up.example.com"+paths.Connect+"?redirect_url="+url.QueryEscape(appURL), mallory, nil, nil)
	cb := e.authorize(rec.Header().Get("Location"))
	// Mallory's callback (her upstream account's code) is fed to alice's browser: refused.
	got := e.do("GET", cb, alice, nil, nil)
	if got.Code != http.StatusForbidden || strings.Contains(got.Body.String(), "href=") {
		t.Fatalf("alice with mallory's state: %d %s (no link to mallory's return target)", got.Code, got.Body.String())
	}
	if ok, _ := e.svc.Connected(context.Background(), "alice", routeID); ok {
		t.Fatal("alice connected to mallory's upstream account")
	}
	// No session: refused, nothing spent either.
	if got := e.do("GET", cb, "", nil, nil); got.Code != http.StatusUnauthorized {
		t.Errorf("no session: %d", got.Code)
	}
	// The state was not spent: its owner still completes the flow, once.
	if got := e.do("GET", cb, mallory, nil, nil); got.Code != http.StatusSeeOther {
		t.Fatalf("mallory: %d %s", got.Code, got.Body.String())
	}
	if got := e.do("GET", cb, mallory, nil, nil); got.Code != http.StatusBadRequest || got.Header().Get("Location") != "" {
		t.Errorf("replayed callback: %d", got.Code)
	}
}

func TestCallback_RefusesBadAnswers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "header", nil)
	sid := e.session("alice", "alice@example.com")
	start := func() url.Values {
		rec := e.do("GET", "https://up.example.com"+paths.Connect+"?redirect_url="+url.QueryEscape(appURL), sid, nil, nil)
		u, _ := url.Parse(e.authorize(rec.Header().Get("Location")))
		return u.Query()
	}
	cb := "https://up.example.com" + paths.UpstreamCallback + "?"
	cases := []struct {
		name   string
		edit   func(q url.Values)
		status int
	}{
		{"unknown state", func(q url.Values) { q.Set("state", "forged") }, http.StatusBadRequest},
		{"no state", func(q url.Values) { q.Del("state") }, http.StatusBadRequest},
		{"iss of another provider", func(q url.Values) { q.Set("iss", "https://evil.example.com") }, http.StatusBadRequest},
		{"provider error", func(q url.Values) { q.Del("code"); q.Set("error", "access_denied") }, http.StatusForbidden},
		{"unregistered error carrying a secret", func(q url.Values) { q.Del("code"); q.Set("error", e.p.secret) }, http.StatusBadGateway},
		{"no code", func(q url.Values) { q.Del("code") }, http.StatusBadRequest},
		{"forged code", func(q url.Values) { q.Set("code", "forged") }, http.StatusBadGateway},
	}
	for _, tc := range cases {
		q := start()
		tc.edit(q)
		rec := e.do("GET", cb+q.Encode(), sid, nil, nil)
		if rec.Code != tc.status || rec.Header().Get("Location") != "" {
			t.Errorf("%s: %d %q, want %d", tc.name, rec.Code, rec.Header().Get("Location"), tc.status)
		}
		// Failures of the session's own flow link back to the application; others do not.
		if back := strings.Contains(rec.Body.String(), `href="`+appURL+`"`); back != (tc.status != http.StatusBadRequest || tc.name == "iss of another provider" || tc.name == "no code") {
			t.Errorf("%s: link back to the application: %v", tc.name, back)
		}
		e.assertNoLeak(rec.Body.String())
	}
	if ok, _ := e.svc.Connected(context.Background(), "alice", routeID); ok {
		t.Error("connected by a refused answer")
	}
}

func TestDisconnect_CSRFAndOrigin(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "header", nil)
	sid := e.session("alice", "alice@example.com")
	e.connect(sid)
	page := e.do("GET", "https://up.example.com"+paths.Disconnect+"?redirect_url="+url.QueryEscape(appURL), sid, nil, nil)
	if page.Code != 200 || !strings.Contains(page.Body.String(), `value="csrf-`+sid+`"`) || !strings.Contains(page.Body.String(), "Upstream") {
		t.Fatalf("page: %d %s", page.Code, page.Body.String())
	}
	if csp := page.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "form-action 'self' https://app.example.com;") {
		t.Errorf("CSP %q", csp)
	}
	form := url.Values{"csrf_token": {"csrf-" + sid}, "redirect_url": {appURL}}
	post := func(f url.Values, s string, hdr map[string]string) int {
		return e.do("POST", "https://up.example.com"+paths.Disconnect, s, f, hdr).Code
	}
	other := e.session("bob", "bob@example.com")
	refused := []struct {
		name string
		code int
	}{
		{"cross-site", post(form, sid, map[string]string{"Sec-Fetch-Site": "cross-site"})},
		{"same-site", post(form, sid, map[string]string{"Sec-Fetch-Site": "same-site"})},
		{"foreign Origin", post(form, sid, map[string]string{"Origin": "https://evil.example.com"})},
		{"Origin null", post(form, sid, map[string]string{"Origin": "null"})},
		{"no CSRF token", post(url.Values{"redirect_url": {appURL}}, sid, nil)},
		{"another session's token", post(url.Values{"csrf_token": {"csrf-" + other}, "redirect_url": {appURL}}, sid, nil)},
		{"foreign redirect_url", post(url.Values{"csrf_token": {"csrf-" + sid}, "redirect_url": {"https://evil.example.com/"}}, sid, nil)},
		{"no session", post(form, "", nil)},
	}
	for _, r := range refused {
		if r.code < 400 {
			t.Errorf("%s: %d", r.name, r.code)
		}
		if ok, _ := e.svc.Connected(context.Background(), "alice", routeID); !ok {
			t.Fatalf("%s disconnected alice", r.name)
		}
	}
	rec := e.do("POST", "https://up.example.com"+paths.Disconnect, sid, form, map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": "https://up.example.com"})
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != appURL {
		t.Fatalf("disconnect: %d %q", rec.Code, rec.Header().Get("Location"))
	}
	if ok, _ := e.svc.Connected(context.Background(), "alice", routeID); ok {
		t.Error("still connected after disconnect")
	}
}
