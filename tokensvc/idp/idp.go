package idp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/mcpmesh/gateway/shared/config"
)

// Sentinel errors callers branch on.
var (
	// ErrRefused means the provider definitively refused: a refresh answered invalid_grant or
	// another 4xx, there is no refresh token, or the account it returned is not the one
	// signed in. The session it belongs to is over.
	ErrRefused = errors.New("idp: provider refused")
	// ErrUnavailable means the provider could not be reached or its discovery document could
	// not be loaded; retrying later may succeed.
	ErrUnavailable = errors.New("idp: provider unavailable")
	// ErrInvalidResponse means the provider answered with something that does not verify: an
	// ID token with a bad signature, issuer, audience, expiry or nonce, a missing ID token,
	// or userinfo for another subject.
	ErrInvalidResponse = errors.New("idp: invalid provider response")
)

// Connector signs users in at one identity provider. Implementations are safe for
// concurrent use.
type Connector interface {
	// AuthCodeURL returns the provider's authorization URL for a code flow with state,
	// nonce and the PKCE S256 challenge of pkceVerifier. It fails with ErrUnavailable while
	// the provider's discovery document cannot be loaded.
	AuthCodeURL(ctx context.Context, state, nonce, pkceVerifier string) (string, error)
	// Exchange redeems code with pkceVerifier and returns the verified identity (its ID token
	// must carry nonce) and the provider's tokens.
	Exchange(ctx context.Context, code, pkceVerifier, nonce string) (Identity, Tokens, error)
	// Refresh uses t.RefreshToken and returns the identity the provider reports now and the
	// new tokens; a refresh token the provider did not rotate is carried over, so the caller
	// always stores the returned Tokens. When the provider returns neither an ID token nor
	// userinfo, Identity is zero and the caller keeps what it had. A refusal wraps
	// ErrRefused.
	Refresh(ctx context.Context, t Tokens) (Identity, Tokens, error)
}

// Identity is who the provider says the user is.
type Identity struct {
	Subject string
	// Email is set only when the provider vouches for the address: email_verified is true
	// (or the string "true", any case), or the claim is absent at a provider whose
	// config.Provider.EmailVerifiedWithoutClaim is set. Otherwise it is empty and the "email"
	// claim is dropped from Claims.
	Email  string
	Name   string
	Groups []string
	// Claims holds every claim of the ID token, completed by userinfo, for claim/<name>
	// policy criteria. Protocol values (nonce, at_hash, c_hash) are left out.
	Claims map[string]any
}

// Tokens are the provider's tokens of one sign-in. They are secrets: store them sealed.
type Tokens struct {
	AccessToken  string    `json:"access_token,omitempty"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	IDToken      string    `json:"id_token,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
}

// Option configures a connector made by New.
type Option func(*options)

type options struct {
	now            func() time.Time
	logger         *slog.Logger
	retryInterval  time.Duration
	healthInterval time.Duration
}

// WithClock sets the clock used for ID token expiry and discovery retries.
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// WithLogger sets the logger for problems that do not fail a sign-in (such as an
// unreachable userinfo endpoint).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithDiscoveryRetry sets the minimum interval between two discovery attempts after a
// failure (default 2s).
func WithDiscoveryRetry(d time.Duration) Option { return func(o *options) { o.retryInterval = d } }

// WithHealthInterval sets how long an answer from the provider vouches that it is up
// (default 10s): a sign-in after that first checks the provider answers, and gets the 503
// page when it does not.
func WithHealthInterval(d time.Duration) Option { return func(o *options) { o.healthInterval = d } }

// DefaultTimeout bounds each request to the provider when New is given no client.
const DefaultTimeout = 10 * time.Second

// MaxResponseBytes bounds every response body read from the provider.
const MaxResponseBytes = 1 << 20

// New returns the connector for cfg.IDPProvider. The redirect URL is
// <authenticate_service_url>/oauth2/callback. client carries every request to the provider;
// nil means a client with DefaultTimeout. Responses are bounded by MaxResponseBytes.
// Discovery happens at first use, not here, so ctx is used only for validation.
func New(ctx context.Context, cfg *config.Config, client *http.Client, opts ...Option) (Connector, error) {
	o := options{now: time.Now, logger: slog.New(slog.DiscardHandler), retryInterval: 2 * time.Second, healthInterval: 10 * time.Second}
	for _, opt := range opts {
		opt(&o)
	}
	// The provider table is config's: validation has refused what is not in it, or not
	// available; New refuses the same, as a configuration error naming the key, for a
	// configuration that skipped validation.
	provider, ok := config.LookupProvider(cfg.IDPProvider)
	switch {
	case !ok:
		return nil, configError("idp_provider", fmt.Sprintf("unknown provider %q", cfg.IDPProvider))
	case provider.Unavailable != "":
		return nil, configError("idp_provider", provider.Unavailable)
	}
	issuer := cfg.IDPProviderURL
	if issuer == "" {
		if provider.Issuer == "" {
			return nil, configError("idp_provider_url", fmt.Sprintf("is required for idp_provider %q", cfg.IDPProvider))
		}
		issuer = provider.Issuer
	}
	if cfg.IDPClientID == "" {
		return nil, configError("idp_client_id", "is required")
	}
	if client == nil {
		client = &http.Client{Timeout: DefaultTimeout}
	}
	client = limitClient(client, MaxResponseBytes)
	if provider.Protocol == config.ProtocolGitHub {
		return newGitHub(issuer, provider, cfg, client, o)
	}
	return newOIDC(issuer, provider, cfg, client, o), nil
}

// configError is a configuration problem found by New: the commands exit 2 on it.
func configError(key, msg string) error {
	return &config.Error{Problems: []config.Problem{{Key: key, Message: msg}}}
}
