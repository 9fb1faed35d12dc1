package idp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/tokensvc/idp/githubtest"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func providerConfig(provider, issuer string) *config.Config {
	c := testConfig(issuer)
	c.IDPProvider = provider
	c.IDPRequestParams = nil
	return c
}

// Azure's common endpoint discovers an issuer template; a token is accepted only when its
// iss is the template filled with its own tid.
func TestAzure_MultiTenantTemplateIsCheckedAgainstTid(t *testing.T) {
	t.Parallel()
	const tenant, other = "72f988bf-86f1-41af-91ab-2d7cd011db47", "9188040d-6c67-4c5b-b112-36a304b66dad"
	cases := []struct {
		name    string
		claims  map[string]any
		iss     string
		wantErr bool
	}{
		{"own tenant", map[string]any{"tid": tenant}, "/" + tenant + "/v2.0", false},
		{"iss of another tenant", map[string]any{"tid": tenant}, "/" + other + "/v2.0", true},
		{"no tid", nil, "/" + tenant + "/v2.0", true},
		{"tid with a slash", map[string]any{"tid": tenant + "/x"}, "/" + tenant + "/x/v2.0", true},
		{"the template itself", map[string]any{"tid": tenant}, "/{tenantid}/v2.0", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := newFakeProvider(t)
			p.iss = p.srv.URL + "/common/v2.0"
			p.discoIss = p.srv.URL + "/{tenantid}/v2.0"
			p.tokenIss = p.srv.URL + tc.iss
			for k, v := range tc.claims {
				p.claims[k] = v
			}
			c, err := New(context.Background(), providerConfig("azure", p.iss), p.srv.Client())
			if err != nil {
				t.Fatal(err)
			}
			v := oauth2.GenerateVerifier()
			code := signIn(t, c.(*OIDC), p, "alice", "n", v)
			_, _, err = c.Exchange(context.Background(), code, v, "n")
			if tc.wantErr != (err != nil) {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if err != nil && !errors.Is(err, ErrInvalidResponse) {
				t.Errorf("err = %v, want ErrInvalidResponse", err)
			}
		})
	}
}

// Only a provider whose row allows templates accepts one; any other issuer mismatch fails
// discovery.
func TestOIDC_DiscoveredIssuerMustMatch(t *testing.T) {
	t.Parallel()
	for _, provider := range []string{"oidc", "okta", "azure"} {
		p := newFakeProvider(t)
		p.iss = p.srv.URL + "/tenant-a/v2.0"
		p.discoIss = p.srv.URL + "/tenant-b/v2.0"
		c, _ := New(context.Background(), providerConfig(provider, p.iss), p.srv.Client())
		if _, err := c.AuthCodeURL(context.Background(), "s", "n", oauth2.GenerateVerifier()); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "names issuer") {
			t.Errorf("%s: %v, want an issuer mismatch", provider, err)
		}
		p2 := newFakeProvider(t)
		p2.iss = p2.srv.URL + "/common/v2.0"
		p2.discoIss = p2.srv.URL + "/{tenantid}/v2.0"
		c2, _ := New(context.Background(), providerConfig(provider, p2.iss), p2.srv.Client())
		_, err := c2.AuthCodeURL(context.Background(), "s", "n", oauth2.GenerateVerifier())
		if (provider == "azure") != (err == nil) {
			t.Errorf("%s with a template issuer: %v", provider, err)
		}
	}
}

// A provider that goes down after discovery: sign-in gets ErrUnavailable (the 503 page) once
// the health interval has passed, and works again when it is back.
func TestOIDC_ProviderDownLaterIsUnavailableUntilBack(t *testing.T) {
	t.Parallel()
	p := newFakeProvider(t)
	now := time.Now()
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	c := newTestConnector(t, p, WithClock(clock), WithHealthInterval(10*time.Second), WithDiscoveryRetry(2*time.Second))
	ctx := context.Background()
	if _, err := c.AuthCodeURL(ctx, "s", "n", oauth2.GenerateVerifier()); err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	p.down = true
	p.mu.Unlock()
	advance(11 * time.Second)
	if _, err := c.AuthCodeURL(ctx, "s", "n", oauth2.GenerateVerifier()); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("provider down: %v, want ErrUnavailable", err)
	}
	p.mu.Lock()
	p.down = false
	p.mu.Unlock()
	if _, err := c.AuthCodeURL(ctx, "s", "n", oauth2.GenerateVerifier()); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("within the retry interval: %v, want the last failure", err)
	}
	advance(3 * time.Second)
	if _, err := c.AuthCodeURL(ctx, "s", "n", oauth2.GenerateVerifier()); err != nil {
		t.Fatalf("provider back: %v", err)
	}
	// A token endpoint failure marks it down at once.
	p.mu.Lock()
	p.tokenFail = http.StatusBadGateway
	p.down = true
	p.mu.Unlock()
	if _, _, err := c.Exchange(ctx, "x", oauth2.GenerateVerifier(), "n"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("exchange: %v", err)
	}
	if _, err := c.AuthCodeURL(ctx, "s", "n", oauth2.GenerateVerifier()); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("after a failed exchange: %v, want ErrUnavailable", err)
	}
}

// No refresh token although offline_access was asked for: the warning names the provider's
// fix, not "request the offline_access scope".
func TestOIDC_NoRefreshTokenWarningNamesTheFix(t *testing.T) {
	t.Parallel()
	for _, provider := range []string{"oidc", "okta", "google"} {
		p := newFakeProvider(t)
		var logs syncBuffer
		cfg := providerConfig(provider, p.issuer())
		c, err := New(context.Background(), cfg, p.srv.Client(), WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
		if err != nil {
			t.Fatal(err)
		}
		p.mu.Lock()
		p.noRefresh = true
		p.mu.Unlock()
		v := oauth2.GenerateVerifier()
		code := signIn(t, c.(*OIDC), p, "alice", "n", v)
		_, toks, err := c.Exchange(context.Background(), code, v, "n")
		if err != nil || toks.RefreshToken != "" {
			t.Fatalf("%s: %v %+v", provider, err, toks)
		}
		row, _ := config.LookupProvider(provider)
		if out := logs.String(); !strings.Contains(out, "issued no refresh token") || !strings.Contains(out, row.RefreshFix[:20]) || strings.Contains(out, "request the offline_access scope") {
			t.Errorf("%s: log %s", provider, out)
		}
		if _, _, err := c.Refresh(context.Background(), Tokens{AccessToken: "a"}); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), row.RefreshFix) {
			t.Errorf("%s: refresh without refresh token: %v", provider, err)
		}
	}
}

func TestApple_NameFromTheFirstSignInsUserField(t *testing.T) {
	t.Parallel()
	p := newFakeProvider(t)
	p.iss = "https://appleid.apple.com"
	p.mutate = func(c map[string]any) { delete(c, "name"); delete(c, "groups"); c["email_verified"] = "true" }
	rw := &rewrite{to: map[string]string{"https://appleid.apple.com": p.srv.URL}, base: http.DefaultTransport}
	c, err := New(context.Background(), providerConfig("apple", ""), &http.Client{Transport: rw})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ user, want string }{
		{`{"name":{"firstName":"Ada","lastName":"Lovelace"},"email":"x@privaterelay.appleid.com"}`, "Ada Lovelace"},
		{"", ""},
		{`not json`, ""},
		{`{"name":{"firstName":"` + strings.Repeat("é", 400) + `"}}`, strings.Repeat("é", MaxNameBytes/2)},
		{`{"name":{"firstName":"A\u0000\u001bB"}}`, "AB"},
	} {
		v := oauth2.GenerateVerifier()
		code := signIn(t, c.(*OIDC), p, "000123.abc", "n", v)
		id, _, err := c.Exchange(WithUserParam(context.Background(), tc.user), code, v, "n")
		if err != nil {
			t.Fatal(err)
		}
		if id.Name != tc.want || id.Email != "000123.abc@example.com" || len(id.Groups) != 0 {
			t.Errorf("user %.40q: identity %+v, want name %q", tc.user, id, tc.want)
		}
	}
}

func TestGitHub_GroupsArePagedAndRefreshUsesTheAccessToken(t *testing.T) {
	t.Parallel()
	alice := githubtest.Alice()
	for i := range 150 {
		alice.Orgs = append(alice.Orgs, fmt.Sprintf("org-%03d", i))
	}
	gh := githubtest.New(t, githubtest.Options{ClientID: fakeClientID, ClientSecret: fakeClientSecret,
		RedirectURI: "https://auth.example.com/oauth2/callback", Users: []githubtest.User{alice, githubtest.Bob()}})
	cfg := providerConfig("github", gh.URL) // Enterprise Server form
	c, err := New(context.Background(), cfg, gh.Client())
	if err != nil {
		t.Fatal(err)
	}
	g := c.(*GitHub)
	if g.APIBase() != gh.URL+"/api/v3" {
		t.Fatalf("API base %s", g.APIBase())
	}
	id, toks := githubSignIn(t, g, gh)
	if len(id.Groups) != 151+2 || id.Groups[150] != "org-149" || id.Groups[len(id.Groups)-1] != "acme/platform" {
		t.Errorf("groups: %d, %q", len(id.Groups), id.Groups[max(len(id.Groups)-3, 0):])
	}
	if !slicesContain(gh.Requests(), "GET /api/v3/user/orgs") {
		t.Error("orgs not read")
	}
	// No refresh token: re-validation reads the identity with the access token…
	id2, toks2, err := g.Refresh(context.Background(), toks)
	if err != nil || id2.Subject != "1001" || toks2.AccessToken != toks.AccessToken {
		t.Fatalf("refresh: %v %+v", err, id2)
	}
	// …until GitHub refuses it (the user revoked the app): ErrRefused, invalid_grant upstream.
	gh.RevokeTokens("alice")
	if _, _, err := g.Refresh(context.Background(), toks); !errors.Is(err, ErrRefused) {
		t.Fatalf("refresh with a revoked token: %v, want ErrRefused", err)
	}
	// GitHub down: unavailable, not refused.
	gh.SetDown(true)
	if _, _, err := g.Refresh(context.Background(), toks); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("GitHub down: %v, want ErrUnavailable", err)
	}
	if _, err := g.AuthCodeURL(context.Background(), "s", "", oauth2.GenerateVerifier()); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("sign-in while GitHub is down: %v, want ErrUnavailable", err)
	}
}

func TestGitHub_UnverifiedPrimaryAddressIsDroppedAndBadCodesRefused(t *testing.T) {
	t.Parallel()
	u := githubtest.User{ID: 7, Login: "eve", Emails: []githubtest.Email{{Email: "ceo@example.com", Primary: true}}}
	gh := githubtest.New(t, githubtest.Options{ClientID: fakeClientID, ClientSecret: fakeClientSecret,
		RedirectURI: "https://auth.example.com/oauth2/callback", Users: []githubtest.User{u}})
	c, _ := New(context.Background(), providerConfig("github", gh.URL), gh.Client())
	g := c.(*GitHub)
	id, _ := githubSignIn(t, g, gh)
	if id.Email != "" || id.Claims["email"] != nil || id.Name != "eve" {
		t.Errorf("identity %+v", id)
	}
	if _, _, err := g.Exchange(context.Background(), "forged", oauth2.GenerateVerifier(), ""); !errors.Is(err, ErrRefused) {
		t.Errorf("forged code: %v, want ErrRefused", err)
	}
}

func TestGitHub_UpperCaseGitHubComIsGitHubCom(t *testing.T) {
	t.Parallel()
	c, err := New(context.Background(), providerConfig("github", "https://GitHub.com"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if api := c.(*GitHub).APIBase(); api != "https://api.github.com" {
		t.Errorf("API base %s", api)
	}
}

func githubSignIn(t *testing.T, g *GitHub, gh *githubtest.Server) (Identity, Tokens) {
	t.Helper()
	v := oauth2.GenerateVerifier()
	raw, err := g.AuthCodeURL(context.Background(), "st", "", v)
	if err != nil {
		t.Fatal(err)
	}
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Get(raw)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, _ := url.Parse(resp.Header.Get("Location"))
	id, toks, err := g.Exchange(context.Background(), loc.Query().Get("code"), v, "")
	if err != nil {
		t.Fatal(err)
	}
	return id, toks
}

func slicesContain(list []string, prefix string) bool {
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

func FuzzNameFromUserParam(f *testing.F) {
	for _, s := range []string{`{"name":{"firstName":"Ada","lastName":"L"}}`, "", "{", `{"name":null}`, `{"name":{"firstName":"\u0000"}}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n := nameFromUserParam(s)
		if len(n) > MaxNameBytes || strings.ContainsAny(n, "\x00\n\r") {
			t.Fatalf("name %q", n)
		}
	})
}

func FuzzHasNextLink(f *testing.F) {
	for _, s := range []string{`<https://api.github.com/user/orgs?page=2>; rel="next", <https://x?page=5>; rel="last"`, "", ";;", `<x>; rel=next`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_ = hasNextLink([]string{s})
	})
}

func FuzzCheckTemplateIssuer(f *testing.F) {
	f.Add("https://login.microsoftonline.com/t1/v2.0", "t1")
	f.Add("https://login.microsoftonline.com/t1/v2.0", "t1/../t2")
	f.Fuzz(func(t *testing.T, iss, tid string) {
		const tmpl = "https://login.microsoftonline.com/{tenantid}/v2.0"
		if checkTemplateIssuer(tmpl, iss, map[string]any{"tid": tid}) == nil {
			if iss != strings.Replace(tmpl, tenantPlaceholder, tid, 1) || strings.ContainsAny(tid, "/?#{}") || tid == "" {
				t.Fatalf("accepted iss %q with tid %q", iss, tid)
			}
		}
	})
}

// Azure's groups overage: no groups claim but _claim_names.groups; the sign-in works, the user
// has no groups, and a warning says why.
func TestAzure_GroupsOverageIsLogged(t *testing.T) {
	t.Parallel()
	p := newFakeProvider(t)
	p.iss = p.srv.URL + "/t1/v2.0"
	p.claims["tid"] = "t1"
	p.mutate = func(c map[string]any) {
		delete(c, "groups")
		c["_claim_names"] = map[string]any{"groups": "src1"}
		c["_claim_sources"] = map[string]any{"src1": map[string]any{"endpoint": "https://graph.microsoft.com/v1.0/users/x/getMemberObjects"}}
	}
	var logs syncBuffer
	c, err := New(context.Background(), providerConfig("azure", p.iss), p.srv.Client(), WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	if err != nil {
		t.Fatal(err)
	}
	v := oauth2.GenerateVerifier()
	code := signIn(t, c.(*OIDC), p, "alice", "n", v)
	id, _, err := c.Exchange(context.Background(), code, v, "n")
	if err != nil {
		t.Fatal(err)
	}
	if len(id.Groups) != 0 || !strings.Contains(logs.String(), "groups overage") {
		t.Errorf("groups %q, log %s", id.Groups, logs.String())
	}
}
