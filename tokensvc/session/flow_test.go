package session

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/shared/checkapi"
	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/tokensvc/secret"
	"github.com/mcpmesh/gateway/tokensvc/store"
	"github.com/mcpmesh/gateway/tokensvc/store/memory"
)

func TestSignIn_FullFlowAcrossTwoHosts(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b := e.browser()

	// Route host -> authenticate host -> provider.
	resp := b.do(http.MethodGet, appOrigin+paths.SignIn+"?return_to="+url.QueryEscape("/dash?x=1"), nil)
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), authnOrigin+paths.AuthenticateSignIn+"?state=") {
		t.Fatalf("sign-in: %d Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	pre := b.cookie(appOrigin+"/.gateway/", SignInCookie)
	if pre == nil {
		t.Fatal("no pre-session cookie on the route host")
	}
	_, at := b.follow(resp.Header.Get("Location"))
	if !strings.HasPrefix(at, idpAuthURL) {
		t.Fatalf("authenticate host did not send to the provider: %s", at)
	}
	// Provider -> callback -> handoff -> return_to.
	cb := b.do(http.MethodGet, e.idp.Login(t, at, "alice"), nil)
	if cb.StatusCode != http.StatusSeeOther || !strings.HasPrefix(cb.Header.Get("Location"), appOrigin+paths.Handoff+"?code=") {
		t.Fatalf("callback: %d Location %q", cb.StatusCode, cb.Header.Get("Location"))
	}
	var authn *http.Cookie
	for _, c := range cb.Cookies() {
		if c.Name == AuthnCookie {
			authn = c
		}
	}
	if authn == nil || !authn.HttpOnly || !authn.Secure || authn.SameSite != http.SameSiteLaxMode || authn.Domain != "" {
		t.Fatalf("authenticate cookie = %+v", authn)
	}
	ho := b.do(http.MethodGet, cb.Header.Get("Location"), nil)
	if ho.StatusCode != http.StatusSeeOther || ho.Header.Get("Location") != "/dash?x=1" {
		t.Fatalf("handoff: %d Location %q", ho.StatusCode, ho.Header.Get("Location"))
	}
	var sc *http.Cookie
	for _, c := range ho.Cookies() {
		if c.Name == checkapi.SessionCookie {
			sc = c
		}
	}
	if sc == nil || !sc.HttpOnly || !sc.Secure || sc.SameSite != http.SameSiteLaxMode || sc.Path != "/" || sc.Domain != "" || sc.MaxAge <= 0 {
		t.Fatalf("session cookie = %+v", sc)
	}
	if sub, _ := b.whoami(appOrigin); sub != "alice" {
		t.Fatalf("app host: signed in as %q, want alice", sub)
	}
	// Only the hash of the cookie is stored, bound to the host.
	c, s, err := e.store.GetBrowserCookie(context.Background(), secret.Hash(sc.Value), "app.example.com", e.clock.now())
	if err != nil || c.Host != "app.example.com" || s.Subject != "alice" || s.Email != "alice@example.com" {
		t.Fatalf("stored cookie %+v session %+v err %v", c, s, err)
	}
	if !s.ExpiresAt.Equal(store.Time(e.clock.now().Add(time.Hour))) {
		t.Errorf("session expires %v, want now + cookie_expiration", s.ExpiresAt)
	}
	raw, err := e.m.sealer.Open(s.IDPTokens, SealPurposeIDPTokens)
	if err != nil || !strings.Contains(string(raw), "rt-1") {
		t.Errorf("IDP tokens not sealed as expected: %v", err)
	}

	// The second host signs in without the provider.
	if at := b.signIn(mcpOrigin, "/mcp", "ignored"); at != mcpOrigin+"/mcp" {
		t.Fatalf("second host ended at %s", at)
	}
	if e.idp.Logins() != 1 {
		t.Errorf("provider logins = %d, want 1 (the authenticate session is reused)", e.idp.Logins())
	}
	if sub, _ := b.whoami(mcpOrigin); sub != "alice" {
		t.Errorf("mcp host: signed in as %q", sub)
	}
	// Already signed in: sign_in goes straight back.
	resp = b.do(http.MethodGet, appOrigin+paths.SignIn+"?return_to=/x", nil)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/x" {
		t.Errorf("signed-in sign_in: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
}

func TestRedirectToSignIn_ReturnsToTheRequestedPage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b := e.browser()
	_, at := b.follow(mcpOrigin + "/.gateway/protected?client_id=abc&state=xyz")
	_, at = b.follow(e.idp.Login(t, at, "bob"))
	if at != mcpOrigin+"/.gateway/protected?client_id=abc&state=xyz" {
		t.Fatalf("ended at %s", at)
	}
	resp := b.do(http.MethodGet, at, nil)
	if body, _ := io.ReadAll(resp.Body); string(body) != "secret page" {
		t.Errorf("body %q", body)
	}
}

func TestSignIn_ProviderStateFromAnotherBrowserRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	attacker, victim := e.browser(), e.browser()
	_, at := attacker.follow(appOrigin + paths.SignIn + "?return_to=/")
	callback := e.idp.Login(t, at, "bob") // the attacker's own account
	resp := victim.do(http.MethodGet, callback, nil)
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("victim completing the attacker's callback: status %d, want 403", resp.StatusCode)
	}
	if c := victim.cookie(authnOrigin+paths.AuthenticateSignIn, AuthnCookie); c != nil {
		t.Error("victim received an authenticate session")
	}
	// The refused callback spent nothing: the state still belongs to the browser that
	// started it (here the attacker's own sign-in), where it completes once.
	if resp := attacker.do(http.MethodGet, callback, nil); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("owner's callback after a refused one: status %d, want 303", resp.StatusCode)
	}
	if resp := attacker.do(http.MethodGet, callback, nil); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("replayed state: status %d, want 400", resp.StatusCode)
	}
}

func TestHandoff_FromAnotherBrowserRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	attacker, victim := e.browser(), e.browser()
	_, at := attacker.follow(appOrigin + paths.SignIn + "?return_to=/")
	cb := attacker.do(http.MethodGet, e.idp.Login(t, at, "bob"), nil)
	handoffURL := cb.Header.Get("Location")
	// Login CSRF: the victim is lured to the attacker's handoff link.
	if resp := victim.do(http.MethodGet, handoffURL, nil); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("victim on attacker's handoff: status %d, want 403", resp.StatusCode)
	}
	if sub, _ := victim.whoami(appOrigin); sub != "" {
		t.Fatalf("victim signed in as %q", sub)
	}
	// The refused attempt did not spend the code: it stays with the browser it was minted
	// for (here the attacker's own sign-in), and it is single use.
	if resp := attacker.do(http.MethodGet, handoffURL, nil); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("owner's handoff after a refused attempt: status %d, want 303", resp.StatusCode)
	}
	if resp := attacker.do(http.MethodGet, handoffURL, nil); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("replayed handoff: status %d, want 400", resp.StatusCode)
	}
}

func TestAuthenticateSignIn_StateFromAnotherBrowserDoesNotSignVictimIn(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	attacker, victim := e.browser(), e.browser()
	victim.signIn(appOrigin, "/", "alice")
	// The attacker starts a sign-in and sends the victim the authenticate-host link.
	resp := attacker.do(http.MethodGet, mcpOrigin+paths.SignIn+"?return_to=/", nil)
	ho := victim.do(http.MethodGet, resp.Header.Get("Location"), nil)
	if !strings.HasPrefix(ho.Header.Get("Location"), mcpOrigin+paths.Handoff) {
		t.Fatalf("expected a handoff redirect, got %d %q", ho.StatusCode, ho.Header.Get("Location"))
	}
	// Neither the victim's browser nor the attacker's may redeem it.
	if r := victim.do(http.MethodGet, ho.Header.Get("Location"), nil); r.StatusCode != http.StatusForbidden {
		t.Errorf("victim redeemed a handoff bound to the attacker's pre-session: %d", r.StatusCode)
	}
}

func TestHandoff_CodeForAnotherHostRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b := e.browser()
	_, at := b.follow(appOrigin + paths.SignIn + "?return_to=/")
	cb := b.do(http.MethodGet, e.idp.Login(t, at, "alice"), nil)
	u, _ := url.Parse(cb.Header.Get("Location"))
	stolen := mcpOrigin + paths.Handoff + "?" + u.RawQuery
	if resp := b.do(http.MethodGet, stolen, nil); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("app host's code on the mcp host: status %d, want 400", resp.StatusCode)
	}
	if sub, _ := b.whoami(mcpOrigin); sub != "" {
		t.Errorf("signed in on the mcp host as %q", sub)
	}
}

func TestSignIn_OpenRedirectInReturnToRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, rt := range []string{"//evil.com", "https://evil.com", `/\evil.com`, "/\t/evil.com", "javascript:alert(1)", "evil.com", "///evil.com", "/%0a/evil.com\n", "\\\\evil.com"} {
		b := e.browser()
		resp := b.do(http.MethodGet, appOrigin+paths.SignIn+"?return_to="+url.QueryEscape(rt), nil)
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("return_to %q: status %d, want 400", rt, resp.StatusCode)
		}
	}
}

func TestValidReturnTo(t *testing.T) {
	t.Parallel()
	cases := map[string]bool{
		"/": true, "/app": true, "/a/b?c=d&e=%2F%2F": true, "/a#frag": true, "/%2F%2Fevil.com": false, // decodes to //evil.com: refused to be safe with decoding upstreams

		"": false, "//evil.com": false, `/\evil.com`: false, "https://evil.com": false, "/a\\b": false,
		"/\x00": false, "/\r\nLocation: x": false, "a/b": false, "/" + strings.Repeat("a", maxReturnTo): false,
	}
	for in, want := range cases {
		if got := ValidReturnTo(in); got != want {
			t.Errorf("ValidReturnTo(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestCurrent_CookieBoundToItsHost(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b := e.browser()
	b.signIn(appOrigin, "/", "alice")
	c := b.cookie(appOrigin, checkapi.SessionCookie)
	if c == nil {
		t.Fatal("no session cookie")
	}
	other := e.browser()
	u, _ := url.Parse(mcpOrigin)
	other.jar.SetCookies(u, []*http.Cookie{{Name: checkapi.SessionCookie, Value: c.Value, Path: "/"}})
	if sub, _ := other.whoami(mcpOrigin); sub != "" {
		t.Fatalf("host A's cookie accepted on host B as %q", sub)
	}
	ua, _ := url.Parse(appOrigin)
	other.jar.SetCookies(ua, []*http.Cookie{{Name: checkapi.SessionCookie, Value: c.Value, Path: "/"}})
	if sub, _ := other.whoami(appOrigin); sub != "alice" {
		t.Errorf("cookie on its own host: %q", sub)
	}
}

func TestCurrent_ExpiredSessionIsSignedOut(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b := e.browser()
	b.signIn(appOrigin, "/", "alice")
	e.clock.add(time.Hour + time.Second)
	if sub, _ := b.whoami(appOrigin); sub != "" {
		t.Fatalf("expired session still current for %q", sub)
	}
	// The authenticate session expired too: the provider is asked again.
	b.signIn(appOrigin, "/", "alice")
	if e.idp.Logins() != 2 {
		t.Errorf("logins = %d, want 2", e.idp.Logins())
	}
}

func TestSignIn_ProviderUnavailable(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.idp.Unavailable = true
	resp, _ := e.browser().follow(appOrigin + paths.SignIn + "?return_to=/a")
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), `href="https://app.example.com/.gateway/sign_in?return_to=%2Fa"`) {
		t.Fatalf("status %d, want 503 with a retry link; body %s", resp.StatusCode, body)
	}
}

func TestCallback_ProviderErrorShown(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b := e.browser()
	_, at := b.follow(appOrigin + paths.SignIn)
	u, _ := url.Parse(at)
	resp := b.do(http.MethodGet, authnOrigin+paths.IDPCallback+"?error=access_denied%3Cscript%3E&state="+url.QueryEscape(u.Query().Get("state")), nil)
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "access_deniedscript") || strings.Contains(string(body), "<script>") {
		t.Fatalf("status %d body %s", resp.StatusCode, body)
	}
}

func TestCallback_FormPost(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b := e.browser()
	_, at := b.follow(appOrigin + paths.SignIn + "?return_to=/p")
	cb, _ := url.Parse(e.idp.Login(t, at, "alice"))
	resp := b.do(http.MethodPost, authnOrigin+paths.IDPCallback, cb.Query())
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), appOrigin+paths.Handoff) {
		t.Fatalf("form_post callback: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
}

func TestSignOut_RevokesSessionGrantsAndCookies(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b := e.browser()
	b.signIn(appOrigin, "/", "alice")
	b.signIn(mcpOrigin, "/mcp", "alice")
	ctx := context.Background()
	_, s, err := e.store.GetBrowserCookie(ctx, secret.Hash(b.cookie(appOrigin, checkapi.SessionCookie).Value), "app.example.com", e.clock.now())
	if err != nil {
		t.Fatal(err)
	}
	g := store.Grant{ID: "g1", ClientID: "c1", SessionID: s.ID, Subject: "alice", CreatedAt: e.clock.now(), ExpiresAt: e.clock.now().Add(24 * time.Hour)}
	if err := e.store.CreateGrant(ctx, g, store.RefreshToken{Hash: secret.Hash("rt"), ExpiresAt: g.ExpiresAt}); err != nil {
		t.Fatal(err)
	}

	page := b.do(http.MethodGet, appOrigin+paths.SignOut+"?return_to=/bye", nil)
	body, _ := io.ReadAll(page.Body)
	_, csrf := b.whoami(appOrigin)
	if page.StatusCode != 200 || !strings.Contains(string(body), csrf) || csrf == "" {
		t.Fatalf("sign-out page: %d, CSRF token missing", page.StatusCode)
	}
	// Without the CSRF token nothing happens.
	if resp := b.do(http.MethodPost, appOrigin+paths.SignOut, url.Values{"csrf_token": {"forged"}}); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("forged CSRF: status %d", resp.StatusCode)
	}
	if sub, _ := b.whoami(appOrigin); sub != "alice" {
		t.Fatal("forged sign-out ended the session")
	}
	resp := b.do(http.MethodPost, appOrigin+paths.SignOut, url.Values{"csrf_token": {csrf}, "return_to": {"/bye"}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/bye" {
		t.Fatalf("sign-out: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	for _, origin := range []string{appOrigin, mcpOrigin} {
		if sub, _ := b.whoami(origin); sub != "" {
			t.Errorf("%s still signed in as %q", origin, sub)
		}
	}
	if got, _ := e.store.GetGrant(ctx, "g1"); got.RevokedAt.IsZero() {
		t.Error("grant of the session not revoked")
	}
	if _, err := e.store.GetSession(ctx, s.ID); err == nil {
		t.Error("session not revoked")
	}
	// The authenticate session is gone too: the provider is asked again.
	b.signIn(appOrigin, "/", "alice")
	if e.idp.Logins() != 2 {
		t.Errorf("logins = %d, want 2", e.idp.Logins())
	}
}

func TestCSRF_BoundToSessionCookieAndHost(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	alice, bob := e.browser(), e.browser()
	alice.signIn(appOrigin, "/", "alice")
	bob.signIn(appOrigin, "/", "bob")
	_, aliceToken := alice.whoami(appOrigin)
	_, bobToken := bob.whoami(appOrigin)
	req := func(b *browser, origin string) *http.Request {
		r, _ := http.NewRequest(http.MethodPost, origin+"/", nil)
		u, _ := url.Parse(origin)
		gw, _ := url.Parse(origin + paths.Consent)
		for _, c := range b.jar.Cookies(gw) {
			r.AddCookie(c)
		}
		h := e.m.hosts.Lookup(u.Host)
		return r.WithContext(hostsWithHost(r, h))
	}
	if !e.m.VerifyCSRF(req(alice, appOrigin), aliceToken) {
		t.Error("alice's own token refused")
	}
	if e.m.VerifyCSRF(req(alice, appOrigin), bobToken) {
		t.Error("bob's token accepted for alice")
	}
	if e.m.VerifyCSRF(req(alice, appOrigin), "") || e.m.VerifyCSRF(e.browser().reqNoCookie(appOrigin), "") {
		t.Error("empty token accepted")
	}
	alice.signIn(mcpOrigin, "/mcp", "alice")
	if e.m.VerifyCSRF(req(alice, mcpOrigin), aliceToken) {
		t.Error("app host token accepted on the mcp host")
	}
}

func TestSignIn_TwoTabsOfOneBrowserBothComplete(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b := e.browser()
	_, at1 := b.follow(appOrigin + paths.SignIn + "?return_to=/one")
	_, at2 := b.follow(mcpOrigin + paths.SignIn + "?return_to=/two")
	if _, end := b.follow(e.idp.Login(t, at1, "alice")); end != appOrigin+"/one" {
		t.Fatalf("first tab ended at %s", end)
	}
	if _, end := b.follow(e.idp.Login(t, at2, "alice")); end != mcpOrigin+"/two" {
		t.Fatalf("second tab ended at %s", end)
	}
}

func TestSignIn_LongestReturnToCompletes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b := e.browser()
	rt := "/?" + strings.Repeat("&", maxReturnTo-2) // JSON escapes each & into six bytes
	if end := b.signIn(appOrigin, rt, "alice"); end != appOrigin+rt {
		t.Fatalf("sign-in with the longest return_to ended at %.80s…", end)
	}
}

// downStore is a memory store whose writes and one-time look-ups fail while down is set, as
// a store does while its database restarts.
type downStore struct {
	*memory.Store
	down atomic.Bool
}

var errStoreDown = errors.New("dial tcp 127.0.0.1:5432: connect: connection refused")

func (d *downStore) GetOneTime(ctx context.Context, h []byte, kind string, now time.Time) (store.OneTime, error) {
	if d.down.Load() {
		return store.OneTime{}, errStoreDown
	}
	return d.Store.GetOneTime(ctx, h, kind, now)
}

func (d *downStore) CreateSession(ctx context.Context, s store.Session) error {
	if d.down.Load() {
		return errStoreDown
	}
	return d.Store.CreateSession(ctx, s)
}

// A store failure when the browser comes back from the provider is a 503 page with
// Retry-After that tells the user to try again (never a 500, never the error), and the
// sign-in started again after the store is back completes.
func TestCallback_StoreDownIsUnavailable(t *testing.T) {
	t.Parallel()
	st := &downStore{Store: memory.New()}
	e := newEnvOn(t, st, newFakeIDP(), &clock{t: time.Unix(1_700_000_000, 0)})
	b := e.browser()
	_, at := b.follow(appOrigin + paths.SignIn + "?return_to=/a")
	if !strings.HasPrefix(at, idpAuthURL) {
		t.Fatalf("sign-in did not reach the provider: %s", at)
	}
	st.down.Store(true)
	resp, _ := b.follow(e.idp.Login(t, at, "alice"))
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" ||
		!strings.Contains(string(body), "Try again") || strings.Contains(string(body), errStoreDown.Error()) {
		t.Fatalf("callback with the store down: %d (Retry-After %q), want 503 asking to try again; body %s",
			resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	st.down.Store(false)
	if got := b.signIn(appOrigin, "/a", "alice"); got != appOrigin+"/a" {
		t.Fatalf("sign-in after the store is back ended at %s", got)
	}
}
