package harness

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// rp is a relying party of the test IDP built from x/oauth2 and go-oidc, as the gateway's
// token service will be.
type rp struct {
	cfg      oauth2.Config
	verifier *oidc.IDTokenVerifier
	provider *oidc.Provider
	issuer   string
}

func newRP(ctx context.Context, t *testing.T, idp *IDP) *rp {
	t.Helper()
	provider, err := oidc.NewProvider(ctx, idp.Issuer)
	if err != nil {
		t.Fatalf("discover %s: %v", idp.Issuer, err)
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	return &rp{
		cfg: oauth2.Config{
			ClientID:     idp.ClientID,
			ClientSecret: idp.ClientSecret,
			Endpoint:     provider.Endpoint(),
			// Registered as http://127.0.0.1/oauth2/callback: loopback redirect URIs match any port.
			RedirectURL: fmt.Sprintf("http://127.0.0.1:%d/oauth2/callback", port),
			Scopes:      []string{oidc.ScopeOpenID, "profile", "email", "groups", oidc.ScopeOfflineAccess},
		},
		verifier: provider.Verifier(&oidc.Config{ClientID: idp.ClientID}),
		provider: provider,
		issuer:   idp.Issuer,
	}
}

// login runs the authorization-code + PKCE flow with b and returns the tokens and the
// verified ID token.
func (r *rp) login(ctx context.Context, t *testing.T, b *Browser) (*oauth2.Token, *oidc.IDToken) {
	t.Helper()
	cb, err := r.authorize(ctx, b)
	if err != nil {
		t.Fatalf("authorize: %v\nhistory: %v", err, b.History())
	}
	return r.redeem(ctx, t, cb)
}

type callback struct {
	query    url.Values
	verifier string
	nonce    string
}

func (r *rp) authorize(ctx context.Context, b *Browser) (*callback, error) {
	state, nonce, verifier := rand.Text(), rand.Text(), oauth2.GenerateVerifier()
	authURL := r.cfg.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oidc.Nonce(nonce))
	stop, err := b.Authorize(ctx, authURL, r.cfg.RedirectURL)
	if err != nil {
		return nil, err
	}
	q := stop.Query()
	if got := q.Get("state"); got != state {
		return nil, fmt.Errorf("callback state %q, want %q", got, state)
	}
	if got := q.Get("iss"); got != r.issuer {
		return nil, fmt.Errorf("callback iss %q, want %q (RFC 9207)", got, r.issuer)
	}
	return &callback{query: q, verifier: verifier, nonce: nonce}, nil
}

func (r *rp) redeem(ctx context.Context, t *testing.T, cb *callback) (*oauth2.Token, *oidc.IDToken) {
	t.Helper()
	if e := cb.query.Get("error"); e != "" {
		t.Fatalf("callback error %s: %s", e, cb.query.Get("error_description"))
	}
	tok, err := r.cfg.Exchange(ctx, cb.query.Get("code"), oauth2.VerifierOption(cb.verifier))
	if err != nil {
		t.Fatalf("exchange code: %v", err)
	}
	idt := r.verifyIDToken(ctx, t, tok)
	if idt.Nonce != cb.nonce {
		t.Errorf("ID token nonce %q, want %q", idt.Nonce, cb.nonce)
	}
	return tok, idt
}

func (r *rp) verifyIDToken(ctx context.Context, t *testing.T, tok *oauth2.Token) *oidc.IDToken {
	t.Helper()
	raw, ok := tok.Extra("id_token").(string)
	if !ok || raw == "" {
		t.Fatalf("token response has no id_token")
	}
	idt, err := r.verifier.Verify(ctx, raw)
	if err != nil {
		t.Fatalf("verify ID token: %v", err)
	}
	return idt
}

// refresh redeems refreshToken once, as an expired oauth2 token source would.
func (r *rp) refresh(ctx context.Context, refreshToken string) (*oauth2.Token, error) {
	return r.cfg.TokenSource(ctx, &oauth2.Token{RefreshToken: refreshToken, Expiry: time.Now().Add(-time.Hour)}).Token()
}

type userClaims struct {
	Sub           string   `json:"sub"`
	Email         string   `json:"email"`
	EmailVerified bool     `json:"email_verified"`
	Name          string   `json:"name"`
	Groups        []string `json:"groups"`
}

func claimsOf(t *testing.T, idt *oidc.IDToken) userClaims {
	t.Helper()
	var c userClaims
	if err := idt.Claims(&c); err != nil {
		t.Fatalf("decode ID token claims: %v", err)
	}
	return c
}

func checkUser(t *testing.T, got userClaims, want IDPUser) {
	t.Helper()
	if got.Sub != want.Sub || got.Email != want.Email || got.EmailVerified != want.EmailVerified ||
		got.Name != want.Name || !slices.Equal(got.Groups, want.Groups) {
		t.Errorf("claims %+v, want %+v", got, want)
	}
}

func wantInvalidGrant(t *testing.T, err error, what string) {
	t.Helper()
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) {
		t.Fatalf("%s: got %v, want an OAuth error invalid_grant", what, err)
	}
	if re.ErrorCode != "invalid_grant" {
		t.Fatalf("%s: error %q (%s), want invalid_grant", what, re.ErrorCode, re.ErrorDescription)
	}
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestIDP_AuthorizationCodePKCE_IDTokenAndRotatingRefresh(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	idp := StartIDP(t, IDPOptions{})
	r := newRP(ctx, t, idp)

	tok, idt := r.login(ctx, t, NewBrowser())
	checkUser(t, claimsOf(t, idt), Alice())
	if tok.RefreshToken == "" {
		t.Fatal("no refresh token issued for offline_access")
	}
	ui, err := r.provider.UserInfo(ctx, oauth2.StaticTokenSource(tok))
	if err != nil {
		t.Fatalf("userinfo: %v", err)
	}
	var uc userClaims
	if err := ui.Claims(&uc); err != nil {
		t.Fatalf("decode userinfo: %v", err)
	}
	checkUser(t, uc, Alice())

	refreshed, err := r.refresh(ctx, tok.RefreshToken)
	if err != nil {
		t.Fatalf("refresh: %v", err)
	}
	if refreshed.AccessToken == "" || refreshed.AccessToken == tok.AccessToken {
		t.Errorf("refresh returned access token %q, want a new one", refreshed.AccessToken)
	}
	if refreshed.RefreshToken == "" || refreshed.RefreshToken == tok.RefreshToken {
		t.Fatalf("refresh token not rotated")
	}
	checkUser(t, claimsOf(t, r.verifyIDToken(ctx, t, refreshed)), Alice())

	// Reusing a rotated refresh token is refused, and (RFC 9700 4.14.2) revokes the grant,
	// so the newest refresh token dies with it.
	_, err = r.refresh(ctx, tok.RefreshToken)
	wantInvalidGrant(t, err, "reuse of a rotated refresh token")
	_, err = r.refresh(ctx, refreshed.RefreshToken)
	wantInvalidGrant(t, err, "refresh after reuse was detected")
}

func TestIDP_WrongPKCEVerifierIsInvalidGrant(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	idp := StartIDP(t, IDPOptions{})
	r := newRP(ctx, t, idp)
	cb, err := r.authorize(ctx, NewBrowser())
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.cfg.Exchange(ctx, cb.query.Get("code"), oauth2.VerifierOption(oauth2.GenerateVerifier()))
	wantInvalidGrant(t, err, "code exchange with the wrong PKCE verifier")
}

func TestIDP_DisabledAccountRefreshIsInvalidGrant(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	idp := StartIDP(t, IDPOptions{})
	r := newRP(ctx, t, idp)
	b := NewBrowser()
	tok, _ := r.login(ctx, t, b)
	tok, err := r.refresh(ctx, tok.RefreshToken)
	if err != nil {
		t.Fatalf("refresh before disable: %v", err)
	}

	idp.Disable(t, "alice")
	_, err = r.refresh(ctx, tok.RefreshToken)
	wantInvalidGrant(t, err, "refresh of a disabled account")

	// A new sign-in as the disabled user ends at the client with access_denied.
	cb, err := r.authorize(ctx, NewBrowser())
	if err != nil {
		t.Fatalf("authorize while disabled: %v", err)
	}
	if got := cb.query.Get("error"); got != "access_denied" {
		t.Fatalf("sign-in while disabled: callback %v, want error=access_denied", cb.query)
	}

	idp.Enable(t, "alice")
	tok, _ = r.login(ctx, t, NewBrowser())
	if _, err := r.refresh(ctx, tok.RefreshToken); err != nil {
		t.Fatalf("refresh after enable and a new sign-in: %v", err)
	}
}

func TestIDP_RevokedGrantRefreshIsInvalidGrant(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	idp := StartIDP(t, IDPOptions{})
	r := newRP(ctx, t, idp)
	b := NewBrowser()
	tok, _ := r.login(ctx, t, b)
	idp.Revoke(t, "alice")
	_, err := r.refresh(ctx, tok.RefreshToken)
	wantInvalidGrant(t, err, "refresh of a revoked grant")
	// The account itself still signs in (the session cookie is still there).
	tok, _ = r.login(ctx, t, b)
	if _, err := r.refresh(ctx, tok.RefreshToken); err != nil {
		t.Fatalf("refresh after a new sign-in: %v", err)
	}
}

func TestIDP_ConsentFormAndLoginAs(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	idp := StartIDP(t, IDPOptions{ConsentForm: true})
	idp.LoginAs(t, "bob")
	r := newRP(ctx, t, idp)

	approve := NewBrowser()
	_, idt := r.login(ctx, t, approve)
	checkUser(t, claimsOf(t, idt), Bob())
	submitted := false
	for _, h := range approve.History() {
		if len(h) > 5 && h[:5] == "POST " {
			submitted = true
		}
	}
	if !submitted {
		t.Errorf("no consent form was submitted: %v", approve.History())
	}

	deny := NewBrowser()
	deny.ConsentButton = FormButton{Name: "action", Value: "deny"}
	cb, err := r.authorize(ctx, deny)
	if err != nil {
		t.Fatalf("authorize with deny: %v", err)
	}
	if got := cb.query.Get("error"); got != "access_denied" {
		t.Fatalf("denied consent: callback %v, want error=access_denied", cb.query)
	}
}
