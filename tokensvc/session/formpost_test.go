package session

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/tokensvc/idp"
)

// postCallback turns the provider's redirect to the callback (code and state in the query)
// into the response_mode=form_post answer: a POST of the same fields to the callback, with
// extra fields.
func postCallback(b *browser, callbackURL string, extra url.Values) *http.Response {
	u, _ := url.Parse(callbackURL)
	form := u.Query()
	for k, v := range extra {
		form[k] = v
	}
	u.RawQuery = ""
	return b.do(http.MethodPost, u.String(), form)
}

// A form_post callback (apple) completes the sign-in like a redirect does.
func TestCallback_FormPostSignsIn(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b := e.browser()
	_, at := b.follow(appOrigin + paths.SignIn + "?return_to=/dash")
	if !strings.HasPrefix(at, idpAuthURL) {
		t.Fatalf("not sent to the provider: %s", at)
	}
	resp := postCallback(b, e.idp.Login(t, at, "alice"), url.Values{"user": {`{"name":{"firstName":"Alice","lastName":"Example"}}`}})
	if resp.StatusCode != http.StatusSeeOther || !strings.Contains(resp.Header.Get("Location"), paths.Handoff) {
		t.Fatalf("form_post callback: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	_, final := b.follow(resp.Header.Get("Location"))
	if final != appOrigin+"/dash" {
		t.Fatalf("ended at %s", final)
	}
}

// Attack: login CSRF through form_post. The attacker signs in at the provider as themself,
// keeps the callback's code and state, and makes the victim's browser POST them to the
// callback from the attacker's page (a cross-site form_post). The victim's browser carries
// its own flow cookie (SameSite=None on https, so it does travel), not the one the state was
// sealed for: refused with 403, and the refusal spends nothing: the attacker's code is still
// outstanding and the victim's own sign-in still completes.
func TestRedTeam_CrossSiteFormPostIsRefusedAndSpendsNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	victim, attacker := e.browser(), e.browser()
	_, victimAt := victim.follow(appOrigin + paths.SignIn + "?return_to=/dash")
	_, attackerAt := attacker.follow(appOrigin + paths.SignIn + "?return_to=/dash")
	attackerCallback := e.idp.Login(t, attackerAt, "bob")
	code := mustQuery(t, attackerCallback, "code")

	resp := postCallback(victim, attackerCallback, url.Values{"user": {`{"name":{"firstName":"Mallory"}}`}})
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("cross-site form_post: %d, want 403", resp.StatusCode)
	}
	if !e.idp.Outstanding(code) {
		t.Error("the refused form_post redeemed the attacker's code")
	}
	if sub, _ := victim.whoami(appOrigin); sub != "" {
		t.Fatalf("victim is signed in as %q", sub)
	}
	// Without any cookie (a browser that drops the flow cookie on a cross-site POST) too.
	fresh := e.browser()
	if resp := postCallback(fresh, attackerCallback, nil); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("form_post without the flow cookie: %d, want 403", resp.StatusCode)
	}
	// The victim's own sign-in is untouched.
	resp = postCallback(victim, e.idp.Login(t, victimAt, "alice"), nil)
	_, final := victim.follow(resp.Header.Get("Location"))
	if sub, _ := victim.whoami(appOrigin); sub != "alice" || final != appOrigin+"/dash" {
		t.Fatalf("victim's own sign-in: %q at %s", sub, final)
	}
}

// Attack: a provider account whose subject has the form of a service identity (client:…)
// would pass for an OAuth client in policies and records: refused at sign-in.
func TestRedTeam_ServiceIdentitySubjectIsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.idp.Users["client:ci-bot"] = idp.Identity{Subject: "client:ci-bot", Email: "ci@example.com"}
	e.idp.Users["CLIENT:x"] = idp.Identity{Subject: "CLIENT:x"}
	for _, sub := range []string{"client:ci-bot", "CLIENT:x"} {
		b := e.browser()
		_, at := b.follow(appOrigin + paths.SignIn + "?return_to=/")
		resp, _ := b.follow(e.idp.Login(t, at, sub))
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", sub, resp.StatusCode)
		}
		if got, _ := b.whoami(appOrigin); got != "" {
			t.Errorf("%s: signed in as %q", sub, got)
		}
	}
}

func mustQuery(t *testing.T, raw, key string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil || u.Query().Get(key) == "" {
		t.Fatalf("no %s in %s", key, raw)
	}
	return u.Query().Get(key)
}

// Apple names the user only at the first sign-in: a re-validation whose identity has no name
// keeps the stored one (and its claim).
func TestRevalidate_KeepsTheNameTheProviderNoLongerSends(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := signedInSession(t, e)
	if s.Name != "Alice" {
		t.Fatalf("signed in as %q", s.Name)
	}
	e.clock.add(2 * time.Hour)
	e.idp.RefreshIdentity = idp.Identity{Subject: "alice", Email: "alice@example.com", Claims: map[string]any{"sub": "alice"}}
	if _, err := e.m.Revalidate(context.Background(), s.ID); err != nil {
		t.Fatal(err)
	}
	stored := mustSession(t, e.store, s.ID)
	if stored.Name != "Alice" || !strings.Contains(string(stored.Claims), `"name":"Alice"`) {
		t.Errorf("name %q, claims %s", stored.Name, stored.Claims)
	}
}
