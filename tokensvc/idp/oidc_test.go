package idp

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/mcpmesh/gateway/shared/config"
)

func testConfig(issuer string) *config.Config {
	return &config.Config{
		AuthenticateServiceURL:  "https://auth.example.com",
		IDPProvider:             "oidc",
		IDPProviderURL:          issuer,
		IDPClientID:             fakeClientID,
		IDPClientSecretResolved: fakeClientSecret,
		IDPRequestParams:        map[string]string{"prompt": "login", "state": "evil"},
	}
}

func newTestConnector(t *testing.T, p *fakeProvider, opts ...Option) *OIDC {
	t.Helper()
	c, err := New(context.Background(), testConfig(p.issuer()), p.srv.Client(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c.(*OIDC)
}

// signIn runs the browser part of a code flow against p and returns the code.
func signIn(t *testing.T, c *OIDC, p *fakeProvider, subject, nonce, verifier string) string {
	t.Helper()
	raw, err := c.AuthCodeURL(context.Background(), "st", nonce, verifier)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(raw)
	q := u.Query()
	return p.issueCode(subject, q.Get("code_challenge"), q.Get("nonce"))
}

func TestOIDC_AuthCodeURLCarriesPKCENonceAndParams(t *testing.T) {
	t.Parallel()
	p := newFakeProvider(t)
	c := newTestConnector(t, p)
	raw, err := c.AuthCodeURL(context.Background(), "the-state", "the-nonce", oauth2.GenerateVerifier())
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	want := map[string]string{
		"state":                 "the-state",
		"nonce":                 "the-nonce",
		"code_challenge_method": "S256",
		"client_id":             fakeClientID,
		"redirect_uri":          "https://auth.example.com/oauth2/callback",
		"response_type":         "code",
		"scope":                 "openid profile email offline_access",
		"prompt":                "login",
	}
	for k, v := range want {
		if got := q.Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	if q.Get("code_challenge") == "" {
		t.Error("no code_challenge")
	}
	if !strings.HasPrefix(raw, p.issuer()+"/authorize?") {
		t.Errorf("url %s is not the discovered authorization endpoint", raw)
	}
}

func TestOIDC_ExchangeVerifiesAndMergesUserInfo(t *testing.T) {
	t.Parallel()
	p := newFakeProvider(t)
	p.claims["department"] = "r&d"
	p.userinfo["locale"] = "de"
	p.userinfo["name"] = "ignored: the ID token has a name"
	c := newTestConnector(t, p)
	v := oauth2.GenerateVerifier()
	code := signIn(t, c, p, "alice", "n-1", v)
	id, tok, err := c.Exchange(context.Background(), code, v, "n-1")
	if err != nil {
		t.Fatal(err)
	}
	if id.Subject != "alice" || id.Email != "alice@example.com" || id.Name != "User alice" || !slices.Equal(id.Groups, []string{"eng", "ops"}) {
		t.Errorf("identity = %+v", id)
	}
	if id.Claims["department"] != "r&d" || id.Claims["locale"] != "de" {
		t.Errorf("claims = %v, want ID token and userinfo claims", id.Claims)
	}
	if _, ok := id.Claims["nonce"]; ok {
		t.Error("nonce kept in claims")
	}
	if tok.AccessToken == "" || tok.RefreshToken == "" || tok.IDToken == "" || tok.Expiry.IsZero() {
		t.Errorf("tokens incomplete: %+v", tok)
	}
}

func TestOIDC_ExchangeRefusesBadIDTokens(t *testing.T) {
	t.Parallel()
	otherKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	cases := []struct {
		name   string
		mutate func(*fakeProvider, map[string]any)
		nonce  string // nonce the caller expects; default the one sent
	}{
		{"wrong nonce", nil, "another-nonce"},
		{"wrong audience", func(_ *fakeProvider, c map[string]any) { c["aud"] = "someone-else" }, ""},
		{"wrong issuer", func(_ *fakeProvider, c map[string]any) { c["iss"] = "https://evil.example.com" }, ""},
		{"expired", func(_ *fakeProvider, c map[string]any) { c["exp"] = time.Now().Add(-time.Minute).Unix() }, ""},
		{"no nonce", func(_ *fakeProvider, c map[string]any) { delete(c, "nonce") }, ""},
		{"foreign signature", func(p *fakeProvider, c map[string]any) { p.signKey = otherKey }, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := newFakeProvider(t)
			c := newTestConnector(t, p)
			if tc.mutate != nil {
				p.mutate = func(claims map[string]any) { tc.mutate(p, claims) }
			}
			v := oauth2.GenerateVerifier()
			code := signIn(t, c, p, "alice", "n-1", v)
			nonce := "n-1"
			if tc.nonce != "" {
				nonce = tc.nonce
			}
			_, _, err := c.Exchange(context.Background(), code, v, nonce)
			if !errors.Is(err, ErrInvalidResponse) {
				t.Fatalf("err = %v, want ErrInvalidResponse", err)
			}
		})
	}
}

func TestOIDC_ExchangeRefusesWrongVerifier(t *testing.T) {
	t.Parallel()
	p := newFakeProvider(t)
	c := newTestConnector(t, p)
	code := signIn(t, c, p, "alice", "n", oauth2.GenerateVerifier())
	_, _, err := c.Exchange(context.Background(), code, oauth2.GenerateVerifier(), "n")
	if !errors.Is(err, ErrRefused) {
		t.Fatalf("err = %v, want ErrRefused", err)
	}
}

func TestOIDC_UnverifiedEmailIsDropped(t *testing.T) {
	t.Parallel()
	p := newFakeProvider(t)
	p.claims["email_verified"] = false
	c := newTestConnector(t, p)
	v := oauth2.GenerateVerifier()
	id, _, err := c.Exchange(context.Background(), signIn(t, c, p, "bob", "n", v), v, "n")
	if err != nil {
		t.Fatal(err)
	}
	if id.Email != "" {
		t.Errorf("email = %q, want empty for email_verified: false", id.Email)
	}
}

func TestOIDC_UserInfoForAnotherSubjectIsRefused(t *testing.T) {
	t.Parallel()
	p := newFakeProvider(t)
	p.userinfo["sub"] = "mallory"
	c := newTestConnector(t, p)
	v := oauth2.GenerateVerifier()
	_, _, err := c.Exchange(context.Background(), signIn(t, c, p, "alice", "n", v), v, "n")
	if !errors.Is(err, ErrInvalidResponse) {
		t.Fatalf("err = %v, want ErrInvalidResponse", err)
	}
}

func TestOIDC_RefreshRotatesAndReportsRefusal(t *testing.T) {
	t.Parallel()
	p := newFakeProvider(t)
	c := newTestConnector(t, p)
	v := oauth2.GenerateVerifier()
	_, tok, err := c.Exchange(context.Background(), signIn(t, c, p, "alice", "n", v), v, "n")
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	p.claims["groups"] = []string{"eng", "admins"}
	p.mu.Unlock()
	id, tok2, err := c.Refresh(context.Background(), tok)
	if err != nil {
		t.Fatal(err)
	}
	if tok2.RefreshToken == "" || tok2.RefreshToken == tok.RefreshToken {
		t.Errorf("refresh token not rotated: %q", tok2.RefreshToken)
	}
	if id.Subject != "alice" || !slices.Equal(id.Groups, []string{"eng", "admins"}) {
		t.Errorf("identity after refresh = %+v", id)
	}
	// The spent refresh token is refused by the provider.
	if _, _, err := c.Refresh(context.Background(), tok); !errors.Is(err, ErrRefused) {
		t.Errorf("spent refresh token: err = %v, want ErrRefused", err)
	}
	if _, _, err := c.Refresh(context.Background(), Tokens{}); !errors.Is(err, ErrRefused) {
		t.Errorf("no refresh token: err = %v, want ErrRefused", err)
	}
	p.mu.Lock()
	p.tokenFail = http.StatusBadGateway
	p.mu.Unlock()
	if _, _, err := c.Refresh(context.Background(), tok2); !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrRefused) {
		t.Errorf("provider 502: err = %v, want ErrUnavailable", err)
	}
}

func TestOIDC_RefreshKeepsUnrotatedRefreshToken(t *testing.T) {
	t.Parallel()
	p := newFakeProvider(t)
	p.noRotate = true
	c := newTestConnector(t, p)
	v := oauth2.GenerateVerifier()
	_, tok, err := c.Exchange(context.Background(), signIn(t, c, p, "alice", "n", v), v, "n")
	if err != nil {
		t.Fatal(err)
	}
	_, tok2, err := c.Refresh(context.Background(), tok)
	if err != nil {
		t.Fatal(err)
	}
	if tok2.RefreshToken != tok.RefreshToken {
		t.Errorf("refresh token %q, want the unrotated %q", tok2.RefreshToken, tok.RefreshToken)
	}
}

func TestOIDC_DiscoveryIsLazyAndRetried(t *testing.T) {
	t.Parallel()
	p := newFakeProvider(t)
	p.down = true
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	c := newTestConnector(t, p, WithClock(clock), WithDiscoveryRetry(5*time.Second))
	if p.discovery != 0 {
		t.Fatalf("New made %d discovery requests, want none", p.discovery)
	}
	if _, err := c.AuthCodeURL(context.Background(), "s", "n", "v"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("provider down: err = %v, want ErrUnavailable", err)
	}
	p.mu.Lock()
	p.down = false
	p.mu.Unlock()
	if _, err := c.AuthCodeURL(context.Background(), "s", "n", "v"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("within retry interval: err = %v, want the remembered ErrUnavailable", err)
	}
	mu.Lock()
	now = now.Add(6 * time.Second)
	mu.Unlock()
	if _, err := c.AuthCodeURL(context.Background(), "s", "n", "v"); err != nil {
		t.Fatalf("after retry interval: %v", err)
	}
	if p.discovery != 2 {
		t.Errorf("discovery requests = %d, want 2", p.discovery)
	}
}

func TestNew_SelectsProvider(t *testing.T) {
	t.Parallel()
	cases := []struct {
		provider, url, wantIssuer, wantErr string
	}{
		{"google", "", "https://accounts.google.com", ""},
		{"gitlab", "", "https://gitlab.com", ""},
		{"apple", "", "https://appleid.apple.com", ""},
		{"okta", "https://example.okta.com/", "https://example.okta.com/", ""},
		{"oidc", "", "", "idp_provider_url: is required"},
		{"azure", "", "", "idp_provider_url: is required"},
		{"hosted", "", "", "not available"},
	}
	for _, tc := range cases {
		cfg := testConfig(tc.url)
		cfg.IDPProvider = tc.provider
		c, err := New(context.Background(), cfg, nil)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: err = %v, want %q", tc.provider, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.provider, err)
			continue
		}
		if got := c.(*OIDC).Issuer(); got != tc.wantIssuer {
			t.Errorf("%s: issuer = %q, want %q", tc.provider, got, tc.wantIssuer)
		}
	}
}

func TestOIDC_OversizedResponseFails(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"issuer":"` + strings.Repeat("a", MaxResponseBytes) + `"}`))
	}))
	defer srv.Close()
	c, err := New(context.Background(), testConfig(srv.URL), srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.AuthCodeURL(context.Background(), "s", "n", "v"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
}

func TestOIDC_UserInfoVerifiesTheIDTokensAddress(t *testing.T) {
	t.Parallel()
	p := newFakeProvider(t)
	p.mutate = func(c map[string]any) { delete(c, "email_verified") }
	p.userinfo["email"] = "bob@example.com"
	p.userinfo["email_verified"] = "true"
	c := newTestConnector(t, p)
	v := oauth2.GenerateVerifier()
	id, _, err := c.Exchange(context.Background(), signIn(t, c, p, "bob", "n", v), v, "n")
	if err != nil {
		t.Fatal(err)
	}
	if id.Email != "bob@example.com" {
		t.Errorf("email = %q, want the ID token's address, verified by userinfo for the same address", id.Email)
	}
}

// Discover is what readiness probes call: it fails while the provider is down (retrying no
// sooner than the retry interval), and once it has succeeded it stays successful though
// the provider goes down again.
func TestOIDC_DiscoverSucceedsOnceForGood(t *testing.T) {
	t.Parallel()
	p := newFakeProvider(t)
	p.down = true
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	c := newTestConnector(t, p, WithClock(clock), WithDiscoveryRetry(5*time.Second))
	if err := c.Discover(context.Background()); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("provider down: %v, want ErrUnavailable", err)
	}
	p.mu.Lock()
	p.down = false
	p.mu.Unlock()
	mu.Lock()
	now = now.Add(6 * time.Second)
	mu.Unlock()
	if err := c.Discover(context.Background()); err != nil {
		t.Fatalf("provider up: %v", err)
	}
	p.mu.Lock()
	p.down = true
	p.mu.Unlock()
	mu.Lock()
	now = now.Add(time.Hour)
	mu.Unlock()
	if err := c.Discover(context.Background()); err != nil {
		t.Fatalf("after a success, provider down again: %v", err)
	}
	if p.discovery != 2 {
		t.Errorf("discovery requests = %d, want 2", p.discovery)
	}
}
