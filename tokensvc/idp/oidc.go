package idp

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/shared/paths"
)

// OIDC is a Connector for an OpenID Connect provider.
type OIDC struct {
	issuer       string
	provider     config.Provider
	clientID     string
	clientSecret string
	redirectURL  string
	scopes       []string
	params       map[string]string
	client       *http.Client
	opts         options

	mu      sync.Mutex
	d       *discovered // nil until discovery succeeds
	lastErr error
	lastTry time.Time
}

// discovered is what discovery yields; immutable once built.
type discovered struct {
	provider *oidc.Provider
	verifier *oidc.IDTokenVerifier
	oauth    *oauth2.Config
	userInfo bool
}

var _ Connector = (*OIDC)(nil)

func newOIDC(issuer string, provider config.Provider, cfg *config.Config, client *http.Client, o options) *OIDC {
	return &OIDC{
		issuer:       strings.TrimSuffix(issuer, "/"),
		provider:     provider,
		clientID:     cfg.IDPClientID,
		clientSecret: cfg.IDPClientSecretResolved,
		redirectURL:  redirectURL(cfg.AuthenticateServiceURL),
		scopes:       cfg.EffectiveIDPScopes(),
		params:       cfg.EffectiveIDPRequestParams(),
		client:       client,
		opts:         o,
	}
}

// redirectURL is the callback on the authenticate host: its origin + paths.IDPCallback
// (the token service serves the authenticate host at its root).
func redirectURL(authenticateServiceURL string) string {
	u, err := url.Parse(authenticateServiceURL)
	if err != nil || u.Host == "" {
		return strings.TrimSuffix(authenticateServiceURL, "/") + paths.IDPCallback
	}
	return u.Scheme + "://" + u.Host + paths.IDPCallback
}

// Issuer returns the issuer URL the connector discovers and verifies against.
func (c *OIDC) Issuer() string { return c.issuer }

// RedirectURL returns the redirect URI sent to the provider.
func (c *OIDC) RedirectURL() string { return c.redirectURL }

// Discover loads the provider's discovery document if it has not been loaded yet, and
// returns nil once it has been, at least once: a success is kept for the connector's life.
// After a failure it tries again no sooner than the retry interval (WithDiscoveryRetry),
// returning the last error meanwhile. Readiness probes call it.
func (c *OIDC) Discover(ctx context.Context) error {
	_, err := c.discover(ctx)
	return err
}

// discover loads the discovery document once. After a failure it tries again at the next
// call, but not sooner than the retry interval, so a provider that is down is not hammered.
func (c *OIDC) discover(ctx context.Context) (*discovered, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.d != nil {
		return c.d, nil
	}
	now := c.opts.now()
	if !c.lastTry.IsZero() && now.Sub(c.lastTry) < c.opts.retryInterval {
		return nil, c.lastErr
	}
	c.lastTry = now
	p, err := oidc.NewProvider(oidc.ClientContext(ctx, c.client), c.issuer)
	if err != nil {
		c.lastErr = fmt.Errorf("discover %s: %w: %v", c.issuer, ErrUnavailable, err)
		return nil, c.lastErr
	}
	var meta struct {
		UserInfo string `json:"userinfo_endpoint"`
	}
	_ = p.Claims(&meta)
	ep := p.Endpoint()
	if ep.AuthURL == "" || ep.TokenURL == "" {
		c.lastErr = fmt.Errorf("discover %s: %w: discovery document lacks authorization or token endpoint", c.issuer, ErrUnavailable)
		return nil, c.lastErr
	}
	c.d = &discovered{
		provider: p,
		verifier: p.Verifier(&oidc.Config{ClientID: c.clientID, Now: c.opts.now}),
		oauth: &oauth2.Config{
			ClientID:     c.clientID,
			ClientSecret: c.clientSecret,
			Endpoint:     ep,
			RedirectURL:  c.redirectURL,
			Scopes:       c.scopes,
		},
		userInfo: meta.UserInfo != "",
	}
	c.lastErr = nil
	return c.d, nil
}

// AuthCodeURL implements Connector.
func (c *OIDC) AuthCodeURL(ctx context.Context, state, nonce, pkceVerifier string) (string, error) {
	d, err := c.discover(ctx)
	if err != nil {
		return "", err
	}
	opts := make([]oauth2.AuthCodeOption, 0, len(c.params)+2)
	for k, v := range c.params {
		switch k {
		case "state", "nonce", "code_challenge", "code_challenge_method", "client_id", "redirect_uri", "response_type", "scope":
			continue // never let configuration override the protocol parameters
		}
		opts = append(opts, oauth2.SetAuthURLParam(k, v))
	}
	opts = append(opts, oidc.Nonce(nonce), oauth2.S256ChallengeOption(pkceVerifier))
	return d.oauth.AuthCodeURL(state, opts...), nil
}

// Exchange implements Connector.
func (c *OIDC) Exchange(ctx context.Context, code, pkceVerifier, nonce string) (Identity, Tokens, error) {
	d, err := c.discover(ctx)
	if err != nil {
		return Identity{}, Tokens{}, err
	}
	tok, err := d.oauth.Exchange(oidc.ClientContext(ctx, c.client), code, oauth2.VerifierOption(pkceVerifier))
	if err != nil {
		return Identity{}, Tokens{}, fmt.Errorf("exchange code: %w", classify(err))
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return Identity{}, Tokens{}, fmt.Errorf("exchange code: %w: the token response has no id_token", ErrInvalidResponse)
	}
	idt, err := d.verifier.Verify(ctx, raw)
	if err != nil {
		return Identity{}, Tokens{}, fmt.Errorf("verify id token: %w: %v", ErrInvalidResponse, err)
	}
	if nonce == "" || subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(nonce)) != 1 {
		return Identity{}, Tokens{}, fmt.Errorf("verify id token: %w: nonce does not match", ErrInvalidResponse)
	}
	claims := map[string]any{}
	if err := idt.Claims(&claims); err != nil {
		return Identity{}, Tokens{}, fmt.Errorf("verify id token: %w: %v", ErrInvalidResponse, err)
	}
	if err := c.mergeUserInfo(ctx, d, tok, idt.Subject, claims); err != nil {
		return Identity{}, Tokens{}, err
	}
	return identityFrom(claims, c.provider), tokensFrom(tok, raw), nil
}

// Refresh implements Connector.
func (c *OIDC) Refresh(ctx context.Context, t Tokens) (Identity, Tokens, error) {
	if t.RefreshToken == "" {
		return Identity{}, Tokens{}, fmt.Errorf("refresh: %w: no refresh token was issued (request the offline_access scope)", ErrRefused)
	}
	d, err := c.discover(ctx)
	if err != nil {
		return Identity{}, Tokens{}, err
	}
	// A token without access token is never valid, so the source refreshes at once.
	tok, err := d.oauth.TokenSource(oidc.ClientContext(ctx, c.client), &oauth2.Token{RefreshToken: t.RefreshToken}).Token()
	if err != nil {
		return Identity{}, Tokens{}, fmt.Errorf("refresh: %w", classify(err))
	}
	claims := map[string]any{}
	subject := ""
	raw, _ := tok.Extra("id_token").(string)
	if raw != "" {
		idt, err := d.verifier.Verify(ctx, raw)
		if err != nil {
			return Identity{}, Tokens{}, fmt.Errorf("refresh: verify id token: %w: %v", ErrInvalidResponse, err)
		}
		if err := idt.Claims(&claims); err != nil {
			return Identity{}, Tokens{}, fmt.Errorf("refresh: verify id token: %w: %v", ErrInvalidResponse, err)
		}
		subject = idt.Subject
	} else {
		raw = t.IDToken
	}
	if err := c.mergeUserInfo(ctx, d, tok, subject, claims); err != nil {
		return Identity{}, Tokens{}, err
	}
	var id Identity
	if len(claims) > 0 {
		id = identityFrom(claims, c.provider)
	}
	return id, tokensFrom(tok, raw), nil
}

// mergeUserInfo adds the userinfo claims the ID token lacks. subject, when set, must match
// the userinfo subject. A userinfo failure is logged and ignored: the ID token suffices.
func (c *OIDC) mergeUserInfo(ctx context.Context, d *discovered, tok *oauth2.Token, subject string, claims map[string]any) error {
	if !d.userInfo || tok.AccessToken == "" {
		return nil
	}
	ui, err := d.provider.UserInfo(oidc.ClientContext(ctx, c.client), oauth2.StaticTokenSource(tok))
	if err != nil {
		c.opts.logger.WarnContext(ctx, "idp userinfo unavailable; using ID token claims only", "issuer", c.issuer, "error", err.Error())
		return nil
	}
	if subject != "" && ui.Subject != subject {
		return fmt.Errorf("userinfo: %w: subject differs from the ID token's", ErrInvalidResponse)
	}
	extra := map[string]any{}
	if err := ui.Claims(&extra); err != nil {
		return fmt.Errorf("userinfo: %w: %v", ErrInvalidResponse, err)
	}
	// The address and its verification come from one source: when the ID token names no
	// address, userinfo's email_verified replaces whatever the ID token said, so an ID
	// token's email_verified: true never vouches for an address userinfo supplied. When the
	// ID token names an address without email_verified, userinfo's email_verified is taken
	// only if userinfo names the same address.
	if _, ok := claims["email"]; !ok {
		if _, ok := extra["email"]; ok {
			delete(claims, "email_verified")
		}
	} else if _, ok := claims["email_verified"]; !ok {
		if ue, _ := extra["email"].(string); ue == "" || ue != claims["email"] {
			delete(extra, "email_verified")
		}
	}
	for k, v := range extra {
		if _, ok := claims[k]; !ok {
			claims[k] = v
		}
	}
	return nil
}

// classify maps token endpoint errors: a 4xx answer (other than 408 and 429), or an OAuth
// error code other than server_error and temporarily_unavailable, is the provider's refusal;
// anything else (5xx, network, timeouts) is unavailability.
func classify(err error) error {
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	status := 0
	if re.Response != nil {
		status = re.Response.StatusCode
	}
	switch {
	case status >= 400 && status < 500 && status != http.StatusRequestTimeout && status != http.StatusTooManyRequests:
		return fmt.Errorf("%w: status %d %s", ErrRefused, status, re.ErrorCode)
	case status < 400 && re.ErrorCode != "" && re.ErrorCode != "server_error" && re.ErrorCode != "temporarily_unavailable":
		return fmt.Errorf("%w: %s", ErrRefused, re.ErrorCode)
	}
	return fmt.Errorf("%w: token endpoint status %d %s", ErrUnavailable, status, re.ErrorCode)
}

func tokensFrom(tok *oauth2.Token, rawIDToken string) Tokens {
	return Tokens{AccessToken: tok.AccessToken, RefreshToken: tok.RefreshToken, IDToken: rawIDToken, Expiry: tok.Expiry}
}
