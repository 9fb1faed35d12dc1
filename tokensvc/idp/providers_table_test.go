package idp

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/tokensvc/idp/githubtest"
)

// rewrite sends requests for the hosts of well-known issuers (accounts.google.com, github.com,
// api.github.com, …) to a test server, so that a configuration without idp_provider_url is
// tested with the URLs the provider table names. It records the URLs asked for.
type rewrite struct {
	to   map[string]string // "https://host" -> test server base (with path prefix)
	base http.RoundTripper

	mu   sync.Mutex
	seen []string
}

func (rw *rewrite) RoundTrip(r *http.Request) (*http.Response, error) {
	rw.mu.Lock()
	rw.seen = append(rw.seen, r.URL.String())
	rw.mu.Unlock()
	origin := r.URL.Scheme + "://" + r.URL.Host
	if target, ok := rw.to[origin]; ok {
		t, _ := url.Parse(target)
		r = r.Clone(r.Context())
		r.URL.Scheme, r.URL.Host = t.Scheme, t.Host
		r.URL.Path = t.Path + r.URL.Path
		r.Host = t.Host
	}
	return rw.base.RoundTrip(r)
}

func (rw *rewrite) asked(prefix string) bool {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	for _, u := range rw.seen {
		if strings.HasPrefix(u, prefix) {
			return true
		}
	}
	return false
}

// providerCase is one provider set up as it is in production: where its issuer lives, and
// what the test provider answers.
type providerCase struct {
	name string
	// path is the issuer's path at the test provider (okta /oauth2/default, …); a trailing
	// slash is kept (auth0).
	path string
	// wellKnown is the provider table's issuer when it has one.
	wellKnown string
	// claims are added to every ID token.
	claims map[string]any
	// wantScopes and wantParams are the defaults the authorization URL carries.
	wantScopes string
	wantParams map[string]string
	// wantGroups are the groups the identity carries with the test provider's ID token.
	wantGroups []string
}

var providerCases = []providerCase{
	{name: "oidc", path: "", wantScopes: "openid profile email offline_access", wantGroups: []string{"eng", "ops"}},
	{name: "okta", path: "/oauth2/default", wantScopes: "openid profile email offline_access", wantGroups: []string{"eng", "ops"}},
	{name: "auth0", path: "/", wantScopes: "openid profile email offline_access", wantGroups: []string{"eng", "ops"}},
	{name: "azure", path: "/9188040d-6c67-4c5b-b112-36a304b66dad/v2.0", claims: map[string]any{"tid": "9188040d-6c67-4c5b-b112-36a304b66dad"},
		wantScopes: "openid profile email offline_access", wantParams: map[string]string{"prompt": "select_account"}, wantGroups: []string{"eng", "ops"}},
	{name: "cognito", path: "/us-east-1_Ab12Cd34", claims: map[string]any{"cognito:groups": []string{"engineering"}},
		wantScopes: "openid profile email", wantGroups: []string{"engineering"}},
	{name: "onelogin", path: "/oidc/2", wantScopes: "openid profile email offline_access", wantGroups: []string{"eng", "ops"}},
	{name: "ping", path: "/0b8c1a2e-env/as", wantScopes: "openid profile email offline_access", wantGroups: []string{"eng", "ops"}},
	{name: "gitlab", wellKnown: "https://gitlab.com", wantScopes: "openid profile email offline_access", wantGroups: []string{"eng", "ops"}},
	{name: "google", wellKnown: "https://accounts.google.com", wantScopes: "openid profile email offline_access",
		wantParams: map[string]string{"prompt": "select_account consent"}},
	{name: "apple", wellKnown: "https://appleid.apple.com", wantScopes: "openid profile email offline_access",
		wantParams: map[string]string{"response_mode": "form_post"}},
	{name: "github", wellKnown: "https://github.com", wantScopes: "read:user user:email read:org",
		wantGroups: []string{"acme", "acme/engineering", "acme/platform"}},
}

// variant is one way an operator configures a provider.
type variant struct {
	name string
	// yaml is added to the configuration; env is the environment.
	yaml string
	env  map[string]string
	// secretFile writes the client secret to a file named by idp_client_secret_file.
	secretFile bool
	// scopes and params are what the authorization URL must carry, given the provider's
	// defaults.
	scopes func(providerCase) string
	params func(providerCase) map[string]string
}

func defaultsOf(p providerCase) map[string]string { return p.wantParams }

var variants = []variant{
	{name: "defaults", scopes: func(p providerCase) string { return p.wantScopes }, params: defaultsOf},
	{name: "overrides", yaml: "idp_scopes: openid, email, groups\nidp_request_params: {prompt: login, login_hint: alice, state: evil, scope: evil}\n",
		scopes: func(providerCase) string { return "openid email groups" },
		params: func(p providerCase) map[string]string {
			out := map[string]string{"prompt": "login", "login_hint": "alice"}
			if p.name == "apple" { // apple merges
				out["response_mode"] = "form_post"
			}
			return out
		}},
	{name: "empty params", yaml: "idp_request_params: {}\n", scopes: func(p providerCase) string { return p.wantScopes },
		params: func(p providerCase) map[string]string {
			if p.name == "apple" {
				return map[string]string{"response_mode": "form_post"}
			}
			return nil
		}},
	{name: "environment", yaml: "idp_scopes: [ignored]\n",
		env:    map[string]string{"IDP_SCOPES": "openid,email", "IDP_REQUEST_PARAMS": `{"prompt":"none"}`, "IDP_CLIENT_ID": fakeClientID, "IDP_CLIENT_SECRET": "from-env"},
		scopes: func(providerCase) string { return "openid email" },
		params: func(p providerCase) map[string]string {
			out := map[string]string{"prompt": "none"}
			if p.name == "apple" {
				out["response_mode"] = "form_post"
			}
			return out
		}},
	{name: "secret file", secretFile: true, scopes: func(p providerCase) string { return p.wantScopes }, params: defaultsOf},
}

// TestProviders_AuthorizationURLAndCodeRedemption configures every provider in every variant
// through config.Parse (YAML, environment, secret file), asserts the exact authorization URL
// (endpoint, client, redirect URI, scopes, request parameters, PKCE S256, nonce, state) and
// redeems a code with it, checking the client secret reached the provider and the identity's
// subject, email and groups.
func TestProviders_AuthorizationURLAndCodeRedemption(t *testing.T) {
	t.Parallel()
	for _, pc := range providerCases {
		for _, v := range variants {
			t.Run(pc.name+"/"+v.name, func(t *testing.T) {
				t.Parallel()
				runProviderCase(t, pc, v)
			})
		}
	}
}

func runProviderCase(t *testing.T, pc providerCase, v variant) {
	secret := "s3cret-" + pc.name
	if v.env["IDP_CLIENT_SECRET"] != "" {
		secret = v.env["IDP_CLIENT_SECRET"]
	}
	rw := &rewrite{to: map[string]string{}, base: http.DefaultTransport}
	client := &http.Client{Transport: rw}
	var (
		fake    *fakeProvider
		gh      *githubtest.Server
		issuer  string // idp_provider_url, or "" for the table's issuer
		authURL string // the authorization endpoint expected
	)
	if pc.name == "github" {
		gh = githubtest.New(t, githubtest.Options{ClientID: fakeClientID, ClientSecret: secret, RedirectURI: "https://auth.example.com/oauth2/callback"})
		rw.to["https://github.com"] = gh.URL
		rw.to["https://api.github.com"] = gh.URL + "/api/v3"
		authURL = "https://github.com/login/oauth/authorize"
	} else {
		fake = newFakeProvider(t)
		fake.secret = secret
		for k, val := range pc.claims {
			fake.claims[k] = val
		}
		if pc.wellKnown != "" {
			fake.iss = pc.wellKnown
			rw.to[pc.wellKnown] = fake.srv.URL
		} else {
			fake.iss = fake.srv.URL + pc.path
			issuer = fake.iss
		}
		authURL = fake.srv.URL + "/authorize"
	}
	yaml := "authenticate_service_url: https://auth.example.com\n" +
		"shared_secret: ZGVtby1vbmx5LXNoYXJlZC1zZWNyZXQtMzItYnl0ZXM=\ncookie_secret: ZGVtby1vbmx5LWNvb2tpZS1zZWNyZXQtMzItYnl0ZXM=\n" +
		"idp_provider: " + pc.name + "\nidp_client_id: " + fakeClientID + "\n" + v.yaml
	if issuer != "" {
		yaml += "idp_provider_url: " + issuer + "\n"
	}
	switch {
	case v.secretFile:
		f := filepath.Join(t.TempDir(), "secret")
		if err := os.WriteFile(f, []byte(secret+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		yaml += "idp_client_secret_file: " + f + "\n"
	case v.env["IDP_CLIENT_SECRET"] == "":
		yaml += "idp_client_secret: " + secret + "\n"
	}
	cfg, err := config.Parse([]byte(yaml), func(k string) (string, bool) { val, ok := v.env[k]; return val, ok })
	if err != nil {
		t.Fatalf("config: %v\n%s", err, yaml)
	}
	c, err := New(context.Background(), cfg, client)
	if err != nil {
		t.Fatal(err)
	}
	const state, nonce = "st-1", "nonce-1"
	verifier := strings.Repeat("v", 43)
	got, err := c.AuthCodeURL(context.Background(), state, nonce, verifier)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(verifier))
	want := url.Values{
		"client_id": {fakeClientID}, "redirect_uri": {"https://auth.example.com/oauth2/callback"}, "response_type": {"code"},
		"scope": {v.scopes(pc)}, "state": {state},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"},
	}
	if pc.name != "github" {
		want.Set("nonce", nonce)
	}
	for k, val := range v.params(pc) {
		want.Set(k, val)
	}
	if wantURL := authURL + "?" + want.Encode(); got != wantURL {
		t.Fatalf("authorization URL\n got %s\nwant %s", got, wantURL)
	}
	if pc.wellKnown != "" && pc.name != "github" && !rw.asked(pc.wellKnown+"/.well-known/openid-configuration") {
		t.Errorf("discovery did not use the table's issuer %s", pc.wellKnown)
	}

	// Redeem a code.
	var id Identity
	var toks Tokens
	if gh != nil {
		u, _ := url.Parse(got)
		u.Scheme, u.Host = "http", strings.TrimPrefix(gh.URL, "http://")
		noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := noFollow.Do(mustNoRedirect(t, u.String()))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		loc, _ := url.Parse(resp.Header.Get("Location"))
		if loc == nil || loc.Query().Get("state") != state {
			t.Fatalf("github authorize: %d %s", resp.StatusCode, resp.Header.Get("Location"))
		}
		id, toks, err = c.Exchange(context.Background(), loc.Query().Get("code"), verifier, "")
		if err != nil {
			t.Fatal(err)
		}
		wantEmail := "alice@example.com"
		if !strings.Contains(v.scopes(pc), "user:email") {
			wantEmail = "" // GitHub lists addresses only with user:email
		}
		if id.Subject != "1001" || id.Email != wantEmail || id.Claims["login"] != "alice" {
			t.Errorf("github identity %+v", id)
		}
		wantGroups := pc.wantGroups
		if !strings.Contains(v.scopes(pc), "read:org") {
			wantGroups = nil // without read:org GitHub lists neither organisations nor teams
		}
		if !slices.Equal(id.Groups, wantGroups) {
			t.Errorf("groups = %q, want %q", id.Groups, wantGroups)
		}
		if toks.AccessToken == "" || toks.RefreshToken != "" {
			t.Errorf("tokens %+v", toks)
		}
		return
	}
	code := fake.issueCode("alice", want.Get("code_challenge"), nonce)
	id, toks, err = c.Exchange(context.Background(), code, verifier, nonce)
	if err != nil {
		t.Fatal(err)
	}
	if id.Subject != "alice" || id.Email != "alice@example.com" {
		t.Errorf("identity %+v", id)
	}
	if !slices.Equal(id.Groups, pc.wantGroups) {
		t.Errorf("groups = %q, want %q", id.Groups, pc.wantGroups)
	}
	if toks.RefreshToken == "" {
		t.Errorf("no refresh token")
	}
	fake.mu.Lock()
	defer fake.mu.Unlock()
	if fake.lastToken["code_verifier"] != verifier {
		t.Errorf("token request %v", fake.lastToken)
	}
}

func mustNoRedirect(t *testing.T, u string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}
