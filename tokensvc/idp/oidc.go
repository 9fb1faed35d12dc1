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

// OIDC is a Connector for an OpenID Connect provider: one row of the provider table
// (config.Provider) decides its issuer, the claims it reads and what it logs.
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
	health       *health

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
	// template is the discovered multi-tenant issuer holding "{tenantid}" (azure's common
	// and organizations endpoints), or "" when ID tokens must carry the issuer itself.
	template string
}

var _ Connector = (*OIDC)(nil)

func newOIDC(issuer string, provider config.Provider, cfg *config.Config, client *http.Client, o options) *OIDC {
	c := &OIDC{
		issuer:       issuer,
		provider:     provider,
		clientID:     cfg.IDPClientID,
		clientSecret: cfg.IDPClientSecretResolved,
		redirectURL:  redirectURL(cfg.AuthenticateServiceURL),
		scopes:       cfg.EffectiveIDPScopes(),
		params:       cfg.EffectiveIDPRequestParams(),
		client:       client,
		opts:         o,
	}
	c.health = newHealth(o, func(ctx context.Context) error { return probe(ctx, client, wellKnown(issuer)) })
	return c
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

func wellKnown(issuer string) string {
	return strings.TrimSuffix(issuer, "/") + "/.well-known/openid-configuration"
}

// Issuer returns the issuer URL the connector discovers and verifies against, exactly as
// configured (auth0's issuers end in a slash, and ID tokens carry it).
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
	d, err := c.load(ctx)
	if err != nil {
		c.lastErr = fmt.Errorf("discover %s: %w: %v", c.issuer, ErrUnavailable, err)
		return nil, c.lastErr
	}
	c.d = d
	c.lastErr = nil
	c.health.up(now)
	return c.d, nil
}

// load fetches and checks the discovery document. Its issuer must be the configured one
// (a trailing slash aside), or, for a provider whose row allows it, a multi-tenant template
// on the same host.
func (c *OIDC) load(ctx context.Context) (*discovered, error) {
	var meta oidc.ProviderConfig
	if err := getJSON(ctx, c.client, wellKnown(c.issuer), "", &meta); err != nil {
		return nil, err
	}
	template := ""
	switch {
	case meta.IssuerURL == c.issuer:
	case strings.TrimSuffix(meta.IssuerURL, "/") == strings.TrimSuffix(c.issuer, "/"):
		// The operator wrote the issuer with or without its trailing slash: ID tokens carry
		// the provider's spelling.
	case c.provider.IssuerTemplate && sameHost(meta.IssuerURL, c.issuer) && strings.Count(meta.IssuerURL, tenantPlaceholder) == 1:
		template = meta.IssuerURL
	default:
		return nil, fmt.Errorf("the discovery document names issuer %q, not %q", meta.IssuerURL, c.issuer)
	}
	if meta.AuthURL == "" || meta.TokenURL == "" || meta.JWKSURL == "" {
		return nil, errors.New("discovery document lacks the authorization, token or jwks endpoint")
	}
	p := meta.NewProvider(oidc.ClientContext(ctx, c.client))
	return &discovered{
		provider: p,
		verifier: p.Verifier(&oidc.Config{ClientID: c.clientID, Now: c.opts.now, SkipIssuerCheck: template != ""}),
		oauth: &oauth2.Config{
			ClientID:     c.clientID,
			ClientSecret: c.clientSecret,
			Endpoint:     p.Endpoint(),
			RedirectURL:  c.redirectURL,
			Scopes:       c.scopes,
		},
		userInfo: meta.UserInfoURL != "",
		template: template,
	}, nil
}

// tenantPlaceholder is the tenant's place in a multi-tenant issuer template.
const tenantPlaceholder = "{tenantid}"

func sameHost(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && ua.Scheme == ub.Scheme && strings.EqualFold(ua.Host, ub.Host)
}

// checkTemplateIssuer accepts an ID token of a multi-tenant issuer only when its iss is the
// template with the token's own tid: a token of one tenant cannot claim another's issuer.
func checkTemplateIssuer(template, iss string, claims map[string]any) error {
	tid, _ := claims["tid"].(string)
	if tid == "" || !validTenantID(tid) {
		return fmt.Errorf("%w: the ID token of a multi-tenant issuer has no valid tid", ErrInvalidResponse)
	}
	if want := strings.Replace(template, tenantPlaceholder, tid, 1); iss != want {
		return fmt.Errorf("%w: ID token issuer %q is not the tenant's issuer %q", ErrInvalidResponse, iss, want)
	}
	return nil
}

func validTenantID(s string) bool {
	if len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}

// AuthCodeURL implements Connector.
func (c *OIDC) AuthCodeURL(ctx context.Context, state, nonce, pkceVerifier string) (string, error) {
	d, err := c.discover(ctx)
	if err != nil {
		return "", err
	}
	if err := c.health.check(ctx); err != nil {
		return "", err
	}
	opts := make([]oauth2.AuthCodeOption, 0, len(c.params)+2)
	for k, v := range c.params {
		if protocolParam(k) {
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
		return Identity{}, Tokens{}, fmt.Errorf("exchange code: %w", c.health.seen(classify(err)))
	}
	c.health.seen(nil)
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
	if d.template != "" {
		if err := checkTemplateIssuer(d.template, idt.Issuer, claims); err != nil {
			return Identity{}, Tokens{}, fmt.Errorf("verify id token: %w", err)
		}
	}
	if err := c.mergeUserInfo(ctx, d, tok, idt.Subject, claims); err != nil {
		return Identity{}, Tokens{}, err
	}
	id := identityFrom(claims, c.provider)
	if c.provider.NameFromUserParam && id.Name == "" {
		id.Name = nameFromUserParam(UserParam(ctx))
		if id.Name != "" {
			id.Claims["name"] = id.Name
		}
	}
	c.warnings(ctx, tok, claims)
	return id, tokensFrom(tok, raw), nil
}

// Refresh implements Connector.
func (c *OIDC) Refresh(ctx context.Context, t Tokens) (Identity, Tokens, error) {
	if t.RefreshToken == "" {
		return Identity{}, Tokens{}, fmt.Errorf("refresh: %w: the provider issued no refresh token at sign-in (%s)", ErrRefused, c.provider.RefreshFix)
	}
	d, err := c.discover(ctx)
	if err != nil {
		return Identity{}, Tokens{}, err
	}
	// A token without access token is never valid, so the source refreshes at once.
	tok, err := d.oauth.TokenSource(oidc.ClientContext(ctx, c.client), &oauth2.Token{RefreshToken: t.RefreshToken}).Token()
	if err != nil {
		return Identity{}, Tokens{}, fmt.Errorf("refresh: %w", c.health.seen(classify(err)))
	}
	c.health.seen(nil)
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
		if d.template != "" {
			if err := checkTemplateIssuer(d.template, idt.Issuer, claims); err != nil {
				return Identity{}, Tokens{}, fmt.Errorf("refresh: verify id token: %w", err)
			}
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
