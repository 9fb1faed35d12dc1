package oauth

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/tokensvc/secret"
	"github.com/mcpmesh/gateway/tokensvc/store"
)

func TestAuthorize_BadClientOrRedirectShowsPageNeverRedirects(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.register(map[string]any{"redirect_uris": []string{"https://client.example.com/callback", loopbackCB}})
	sess := e.newSession("alice")
	_, challenge := pkce()
	cases := []struct {
		name   string
		mutate func(url.Values)
	}{
		{"no client_id", func(p url.Values) { p.Del("client_id") }},
		{"unknown client", func(p url.Values) { p.Set("client_id", "nope") }},
		{"repeated client_id", func(p url.Values) { p.Add("client_id", c.ID) }},
		{"no redirect_uri", func(p url.Values) { p.Del("redirect_uri") }},
		{"repeated redirect_uri", func(p url.Values) { p.Add("redirect_uri", "https://evil.example/cb") }},
		{"open redirect", func(p url.Values) { p.Set("redirect_uri", "https://evil.example/callback") }},
		{"look-alike host", func(p url.Values) { p.Set("redirect_uri", "https://client.example.com.evil.example/callback") }},
		{"userinfo trick", func(p url.Values) { p.Set("redirect_uri", "https://client.example.com@evil.example/callback") }},
		{"path traversal", func(p url.Values) { p.Set("redirect_uri", "https://client.example.com/callback/../x") }},
		{"extra query", func(p url.Values) { p.Set("redirect_uri", "https://client.example.com/callback?to=evil") }},
		{"port on https", func(p url.Values) { p.Set("redirect_uri", "https://client.example.com:444/callback") }},
		{"loopback path differs", func(p url.Values) { p.Set("redirect_uri", "http://127.0.0.1:9/other") }},
		{"loopback host swapped", func(p url.Values) { p.Set("redirect_uri", "http://localhost:33418/callback") }},
		{"javascript", func(p url.Values) { p.Set("redirect_uri", "javascript:alert(1)") }},
		{"data", func(p url.Values) { p.Set("redirect_uri", "data:text/html,<script>x</script>") }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := authParams(c, challenge)
			p.Set("redirect_uri", "https://client.example.com/callback")
			tc.mutate(p)
			rec := e.get(issuer+paths.Authorize+"?"+p.Encode(), sess.ID)
			if rec.Code != http.StatusBadRequest || rec.Header().Get("Location") != "" {
				t.Fatalf("status %d, Location %q", rec.Code, rec.Header().Get("Location"))
			}
			if !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") || rec.Header().Get("X-Frame-Options") != "DENY" {
				t.Errorf("headers %v", rec.Header())
			}
			if strings.Contains(rec.Body.String(), "<script>x") {
				t.Error("page reflects unescaped input")
			}
		})
	}
}

// For an operator-configured (static) client, errors after the redirect URI check go back to
// the client. (A registered or metadata-document client gets the error page instead:
// TestRedTeam_AuthorizeErrorsBeforeConsentNeverRedirectToUnvettedClients.)
func TestAuthorize_ErrorsAfterRedirectCheckGoToClient(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if err := e.st.CreateClient(context.Background(), store.Client{
		ID: "static-code", Kind: store.ClientStatic, RedirectURIs: []string{loopbackCB},
		GrantTypes: []string{grantAuthorizationCode}, ResponseTypes: []string{responseTypeCode}, TokenEndpointAuthMethod: authNone,
	}); err != nil {
		t.Fatal(err)
	}
	c := registered{ID: "static-code", RedirectURI: loopbackCB}
	if err := e.st.CreateClient(context.Background(), store.Client{
		ID: "static-nocode", Kind: store.ClientStatic, RedirectURIs: []string{loopbackCB},
		GrantTypes: []string{grantRefreshToken}, TokenEndpointAuthMethod: authNone,
	}); err != nil {
		t.Fatal(err)
	}
	noCode := registered{ID: "static-nocode", RedirectURI: loopbackCB}
	sess := e.newSession("alice")
	_, challenge := pkce()
	cases := []struct {
		name   string
		client registered
		mutate func(url.Values)
		code   string
	}{
		{"missing response_type", c, func(p url.Values) { p.Del("response_type") }, errInvalidRequest},
		{"implicit response_type", c, func(p url.Values) { p.Set("response_type", "token") }, errUnsupportedResponseType},
		{"missing PKCE", c, func(p url.Values) { p.Del("code_challenge"); p.Del("code_challenge_method") }, errInvalidRequest},
		{"missing method (plain by default)", c, func(p url.Values) { p.Del("code_challenge_method") }, errInvalidRequest},
		{"plain PKCE downgrade", c, func(p url.Values) { p.Set("code_challenge_method", "plain") }, errInvalidRequest},
		{"lower-case s256", c, func(p url.Values) { p.Set("code_challenge_method", "s256") }, errInvalidRequest},
		{"challenge not S256-shaped", c, func(p url.Values) { p.Set("code_challenge", "short") }, errInvalidRequest},
		{"resource of another host", c, func(p url.Values) { p.Set("resource", resSolo) }, errInvalidTarget},
		{"resource unknown path", c, func(p url.Values) { p.Set("resource", issuer+"/admin") }, errInvalidTarget},
		{"resource client route", c, func(p url.Values) { p.Set("resource", appOrigin) }, errInvalidTarget},
		{"resource with fragment", c, func(p url.Values) { p.Set("resource", resMain+"#x") }, errInvalidTarget},
		{"resource relative", c, func(p url.Values) { p.Set("resource", "/mcp") }, errInvalidTarget},
		{"two resources", c, func(p url.Values) { p.Add("resource", resOther) }, errInvalidTarget},
		{"repeated parameter", c, func(p url.Values) { p.Add("code_challenge", challenge) }, errInvalidRequest},
		{"repeated state", c, func(p url.Values) { p.Add("state", "other") }, errInvalidRequest},
		{"malformed scope", c, func(p url.Values) { p.Set("scope", "a\"b") }, errInvalidScope},
		{"request object", c, func(p url.Values) { p.Set("request", "eyJ...") }, errRequestNotSupported},
		{"request_uri", c, func(p url.Values) { p.Set("request_uri", "urn:x") }, errRequestURINotSupported},
		{"fragment response mode", c, func(p url.Values) { p.Set("response_mode", "fragment") }, errInvalidRequest},
		{"huge state", c, func(p url.Values) { p.Set("state", strings.Repeat("s", maxStateLen+1)) }, errInvalidRequest},
		{"client not registered for code", noCode, func(p url.Values) {}, errUnauthorizedClient},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := authParams(tc.client, challenge)
			tc.mutate(p)
			rec := e.get(issuer+paths.Authorize+"?"+p.Encode(), sess.ID)
			if rec.Code != http.StatusFound {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			u := location(t, rec)
			q := u.Query()
			if !strings.HasPrefix(u.String(), loopbackCB+"?") || q.Get("error") != tc.code || q.Get("iss") != issuer {
				t.Fatalf("Location %s, want error %s", u, tc.code)
			}
			if tc.name != "huge state" && tc.name != "repeated state" && q.Get("state") != "st-123" {
				t.Errorf("state %q", q.Get("state"))
			}
			if q.Has("code") {
				t.Error("error response carries a code")
			}
		})
	}
}

func TestAuthorize_SignedOutGoesThroughSignInAndBack(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.register(nil)
	_, challenge := pkce()
	p := authParams(c, challenge)
	rec := e.get(issuer+paths.Authorize+"?"+p.Encode(), "")
	if rec.Code != http.StatusFound {
		t.Fatalf("status %d", rec.Code)
	}
	u := location(t, rec)
	if u.Path != paths.SignIn || u.Query().Get("return_to") != paths.Authorize+"?"+p.Encode() {
		t.Fatalf("Location %s", u)
	}

	// An expired browser session counts as signed out.
	sess := e.newSession("alice")
	e.clock.Advance(15 * time.Hour)
	rec = e.get(issuer+paths.Authorize+"?"+p.Encode(), sess.ID)
	if location(t, rec).Path != paths.SignIn {
		t.Fatalf("expired session: Location %s", rec.Header().Get("Location"))
	}

	// prompt=none cannot sign in. An operator-configured client is told so; a registered
	// one gets the error page (TestRedTeam_AuthorizeErrorsBeforeConsentNeverRedirectToUnvettedClients).
	if err := e.st.CreateClient(context.Background(), store.Client{
		ID: "static-code", Kind: store.ClientStatic, RedirectURIs: []string{loopbackCB},
		GrantTypes: []string{grantAuthorizationCode}, ResponseTypes: []string{responseTypeCode}, TokenEndpointAuthMethod: authNone,
	}); err != nil {
		t.Fatal(err)
	}
	p = authParams(registered{ID: "static-code", RedirectURI: loopbackCB}, challenge)
	p.Set("prompt", "none")
	rec = e.get(issuer+paths.Authorize+"?"+p.Encode(), "")
	if q := location(t, rec).Query(); q.Get("error") != errLoginRequired {
		t.Fatalf("prompt=none: %v", q)
	}
}

func TestAuthorize_PostFormIsAccepted(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.register(nil)
	sess := e.newSession("alice")
	_, challenge := pkce()
	rec := e.postForm(issuer+paths.Authorize, authParams(c, challenge), sess.ID)
	consentHandle(t, rec)
}

func TestAuthorize_ConsentPageIsSafe(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.register(map[string]any{"client_name": `<script>alert("x")</script>`})
	sess := e.newSession("alice")
	_, challenge := pkce()
	p := authParams(c, challenge)
	p.Set("scope", "offline_access openid")
	rec := e.get(issuer+paths.Authorize+"?"+p.Encode(), sess.ID)
	handle := consentHandle(t, rec)
	body := rec.Body.String()
	for _, want := range []string{
		`&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;`, c.ID, "http://127.0.0.1:33418", resMain, "offline_access",
		`action="` + paths.Consent + `"`, `name="csrf" value="csrf-` + sess.ID + `"`,
		`<button type="submit" name="action" value="approve">`, `<button type="submit" name="action" value="deny">`,
		"alice@example.com",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(body, "<script>") || strings.Contains(body, "openid") {
		t.Error("page has unescaped script or an ungranted scope")
	}
	h := rec.Header()
	for k, want := range map[string]string{
		"Cache-Control":           "no-store",
		"X-Frame-Options":         "DENY",
		"Referrer-Policy":         "no-referrer",
		"Content-Security-Policy": cspConsent,
	} {
		if h.Get(k) != want {
			t.Errorf("%s = %q, want %q", k, h.Get(k), want)
		}
	}
	// The pending request is a OneTime bound to the session.
	ot, err := e.st.TakeOneTime(context.Background(), secret.Hash(handle), oneTimeKindConsent, e.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	var req authRequest
	_ = json.Unmarshal(ot.Payload, &req)
	if req.SessionID != sess.ID || req.Issuer != issuer || req.Resource != resMain || req.Scope != "mcp offline_access" {
		t.Errorf("stored request %+v", req)
	}
	if !ot.ExpiresAt.Equal(store.Time(e.clock.Now().Add(10 * time.Minute))) {
		t.Errorf("expires %v", ot.ExpiresAt)
	}
}

func TestConsent_ApproveRedirectsWithCodeStateAndIss(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.register(nil)
	sess := e.newSession("alice")
	_, challenge := pkce()
	handle := consentHandle(t, e.get(issuer+paths.Authorize+"?"+authParams(c, challenge).Encode(), sess.ID))
	rec := e.answerConsent(issuer, sess.ID, handle, actionApprove)
	if rec.Code != http.StatusSeeOther {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	u := location(t, rec)
	q := u.Query()
	if u.Scheme+"://"+u.Host+u.Path != loopbackCB || q.Get("code") == "" || q.Get("state") != "st-123" || q.Get("iss") != issuer {
		t.Fatalf("Location %s", u)
	}
	ac, err := e.st.TakeAuthCode(context.Background(), secret.Hash(q.Get("code")), e.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if ac.ClientID != c.ID || ac.SessionID != sess.ID || ac.Subject != "alice" || ac.RedirectURI != loopbackCB ||
		ac.CodeChallenge != challenge || ac.Resource != resMain || !ac.ExpiresAt.Equal(store.Time(e.clock.Now().Add(time.Minute))) {
		t.Errorf("stored code %+v", ac)
	}
}

func TestConsent_DenyAnswersAccessDenied(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.register(nil)
	sess := e.newSession("alice")
	_, challenge := pkce()
	handle := consentHandle(t, e.get(issuer+paths.Authorize+"?"+authParams(c, challenge).Encode(), sess.ID))
	q := location(t, e.answerConsent(issuer, sess.ID, handle, actionDeny)).Query()
	if q.Get("error") != errAccessDenied || q.Get("state") != "st-123" || q.Get("iss") != issuer || q.Has("code") {
		t.Fatalf("query %v", q)
	}
}

func TestConsent_Attacks(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.register(nil)
	_, challenge := pkce()
	newHandle := func(sess store.Session) string {
		return consentHandle(t, e.get(issuer+paths.Authorize+"?"+authParams(c, challenge).Encode(), sess.ID))
	}
	alice, mallory := e.newSession("alice"), e.newSession("mallory")

	t.Run("missing CSRF token", func(t *testing.T) {
		h := newHandle(alice)
		rec := e.postForm(issuer+paths.Consent, url.Values{"request": {h}, "action": {"approve"}}, alice.ID)
		if rec.Code != http.StatusForbidden || rec.Header().Get("Location") != "" {
			t.Fatalf("status %d", rec.Code)
		}
	})
	t.Run("CSRF token of another session", func(t *testing.T) {
		h := newHandle(alice)
		rec := e.postForm(issuer+paths.Consent, url.Values{"csrf": {"csrf-" + mallory.ID}, "request": {h}, "action": {"approve"}}, alice.ID)
		if rec.Code != http.StatusForbidden {
			t.Fatalf("status %d", rec.Code)
		}
	})
	t.Run("request of another session", func(t *testing.T) {
		h := newHandle(alice)
		rec := e.answerConsent(issuer, mallory.ID, h, actionApprove)
		if rec.Code != http.StatusForbidden || rec.Header().Get("Location") != "" {
			t.Fatalf("status %d", rec.Code)
		}
		// The refused answer did not spend the handle: alice can still answer it.
		if rec := e.answerConsent(issuer, alice.ID, h, actionApprove); rec.Code != http.StatusSeeOther {
			t.Fatalf("alice after the attack: status %d", rec.Code)
		}
	})
	t.Run("replayed approval", func(t *testing.T) {
		h := newHandle(alice)
		if rec := e.answerConsent(issuer, alice.ID, h, actionApprove); rec.Code != http.StatusSeeOther {
			t.Fatalf("first: status %d", rec.Code)
		}
		if rec := e.answerConsent(issuer, alice.ID, h, actionApprove); rec.Code != http.StatusBadRequest {
			t.Fatalf("replay: status %d", rec.Code)
		}
	})
	t.Run("expired request", func(t *testing.T) {
		e := newEnv(t)
		c := e.register(nil)
		sess := e.newSession("alice")
		h := consentHandle(t, e.get(issuer+paths.Authorize+"?"+authParams(c, challenge).Encode(), sess.ID))
		e.clock.Advance(11 * time.Minute)
		if rec := e.answerConsent(issuer, sess.ID, h, actionApprove); rec.Code != http.StatusBadRequest {
			t.Fatalf("status %d", rec.Code)
		}
	})
	t.Run("answered on another issuer", func(t *testing.T) {
		h := newHandle(alice)
		if rec := e.answerConsent(soloIssuer, alice.ID, h, actionApprove); rec.Code != http.StatusForbidden {
			t.Fatalf("status %d", rec.Code)
		}
	})
	t.Run("signed out", func(t *testing.T) {
		h := newHandle(alice)
		if rec := e.postForm(issuer+paths.Consent, url.Values{"request": {h}, "action": {"approve"}}, ""); rec.Code != http.StatusUnauthorized {
			t.Fatalf("status %d", rec.Code)
		}
	})
	t.Run("GET", func(t *testing.T) {
		if rec := e.get(issuer+paths.Consent, alice.ID); rec.Code != http.StatusMethodNotAllowed {
			t.Fatalf("status %d", rec.Code)
		}
	})
}

func TestAuthorize_LoopbackPortMayVaryOnlyOnLoopback(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.register(map[string]any{"redirect_uris": []string{"http://127.0.0.1/callback", "https://client.example.com/cb"}})
	sess := e.newSession("alice")
	code, _ := e.authorizeCode(c, sess, url.Values{"redirect_uri": {"http://127.0.0.1:49152/callback"}})
	if code == "" {
		t.Fatal("no code")
	}
	_, challenge := pkce()
	p := authParams(c, challenge)
	p.Set("redirect_uri", "https://client.example.com:8443/cb")
	if rec := e.get(issuer+paths.Authorize+"?"+p.Encode(), sess.ID); rec.Code != http.StatusBadRequest || rec.Header().Get("Location") != "" {
		t.Fatalf("https port change: status %d Location %q", rec.Code, rec.Header().Get("Location"))
	}
}

// TestAuthorize_ResourceIsNormalised: spellings of one resource (a trailing slash, upper-case
// host, the default port) bind the grant to the route's own resource, and the origin to the
// origin: the code the client redeems carries the normalised value.
func TestAuthorize_ResourceIsNormalised(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.register(nil)
	sess := e.newSession("alice")
	for _, tc := range []struct{ res, want string }{
		{resMain + "/", resMain},
		{"https://MCP.example.com:443/mcp", resMain},
		{issuer, issuer},
		{"https://MCP.example.com:443", issuer},
	} {
		_, challenge := pkce()
		p := authParams(c, challenge)
		p.Set("resource", tc.res)
		handle := consentHandle(t, e.get(issuer+paths.Authorize+"?"+p.Encode(), sess.ID))
		code := location(t, e.answerConsent(issuer, sess.ID, handle, actionApprove)).Query().Get("code")
		ac, err := e.st.TakeAuthCode(context.Background(), secret.Hash(code), e.clock.Now())
		if err != nil {
			t.Fatalf("%s: %v", tc.res, err)
		}
		if ac.Resource != tc.want {
			t.Errorf("resource %q bound the code to %q, want %q", tc.res, ac.Resource, tc.want)
		}
	}
}

func TestAuthorize_StaticClientSkipsConsent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if err := e.st.CreateClient(context.Background(), store.Client{
		ID: "static-1", Kind: store.ClientStatic, RedirectURIs: []string{loopbackCB},
		GrantTypes: []string{grantAuthorizationCode}, ResponseTypes: []string{responseTypeCode}, TokenEndpointAuthMethod: authNone,
	}); err != nil {
		t.Fatal(err)
	}
	sess := e.newSession("alice")
	_, challenge := pkce()
	rec := e.get(issuer+paths.Authorize+"?"+authParams(registered{ID: "static-1", RedirectURI: loopbackCB}, challenge).Encode(), sess.ID)
	if rec.Code != http.StatusFound || location(t, rec).Query().Get("code") == "" {
		t.Fatalf("status %d Location %q", rec.Code, rec.Header().Get("Location"))
	}
}

func TestAuthorize_DynamicClientNeverSkipsConsent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.register(nil)
	sess := e.newSession("alice")
	_, challenge := pkce()
	// Even a signed-in user who approved this client before gets the page again.
	e.authorizeCode(c, sess, nil)
	for _, prompt := range []string{"", "consent", "login"} {
		p := authParams(c, challenge)
		if prompt != "" {
			p.Set("prompt", prompt)
		}
		rec := e.get(issuer+paths.Authorize+"?"+p.Encode(), sess.ID)
		if rec.Code != http.StatusOK || rec.Header().Get("Location") != "" || strings.Contains(rec.Body.String(), "code=") {
			t.Fatalf("prompt %q: status %d Location %q", prompt, rec.Code, rec.Header().Get("Location"))
		}
		consentHandle(t, rec)
	}
}
