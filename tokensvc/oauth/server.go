package oauth

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/tokensvc/hosts"
	"github.com/mcpmesh/gateway/tokensvc/store"
)

// Fixed limits and lifetimes of the authorization server.
const (
	// maxBodyBytes bounds every request body (token, register, revoke,
	// consent, authorize POST) and every client metadata document.
	maxBodyBytes = 64 << 10
	// codeLifetime is the lifetime of an authorization code.
	codeLifetime = 60 * time.Second
	// consentLifetime is how long a consent page stays answerable.
	consentLifetime = 10 * time.Minute
	// clientIdleLifetime is how long a dynamically registered client lives
	// without being used; each use extends it.
	clientIdleLifetime = 30 * 24 * time.Hour
	// clientTouchInterval throttles the store write that records a use.
	clientTouchInterval = time.Hour
	// oneTimeKindConsent is the store.OneTime kind of a pending consent.
	oneTimeKindConsent = "consent"
	// clientRouteClientID is the ClientID of tokens minted by IssueClientToken.
	clientRouteClientID = "gateway:mcp-client-route"
)

// ErrIDPRefused is returned (possibly wrapped) by [Sessions.Revalidate] when
// the identity provider refuses to renew the sign-in: its refresh token
// expired or was revoked, the account is disabled, or the provider denied
// the refresh. The token endpoint answers invalid_grant.
var ErrIDPRefused = errors.New("oauth: identity provider refused to revalidate the session")

// ErrInvalidToken is returned by [Server.ValidateAccessToken] for a token
// that is unknown, expired, revoked, or bound to another resource.
var ErrInvalidToken = errors.New("oauth: invalid access token")

// Sessions is the browser-session service the authorization server needs.
// Package session implements it; the server never reads cookies itself.
type Sessions interface {
	// Current returns the browser session of r on its host, or (nil, nil)
	// when signed out.
	Current(r *http.Request) (*store.Session, error)
	// RedirectToSignIn sends the browser through sign-in and back to
	// returnTo, a path and query on r's host.
	RedirectToSignIn(w http.ResponseWriter, r *http.Request, returnTo string)
	// CSRFToken returns a form token bound to r's browser session cookie.
	CSRFToken(r *http.Request) string
	// VerifyCSRF reports whether token was made by CSRFToken for r's
	// browser session.
	VerifyCSRF(r *http.Request, token string) bool
	// Revalidate re-checks an expired session with the identity provider
	// (using its refresh token), updates the stored session (new expiry,
	// claims, rotated IDP refresh token) and returns it. It returns an error
	// wrapping ErrIDPRefused when the provider refuses, or store.ErrNotFound
	// when the session is gone or revoked; any other error is treated as
	// transient.
	Revalidate(ctx context.Context, sessionID string) (*store.Session, error)
}

// Server is the OAuth 2.1 authorization server. Create it with New; its
// endpoints are the handlers of handlers.go, which the caller routes.
type Server struct {
	cfg        *config.Config
	store      store.Store
	sessions   Sessions
	now        func() time.Time
	log        *slog.Logger
	docs       *documentResolver
	docClient  *http.Client
	accessTTL  time.Duration
	refreshTTL time.Duration
	// registrations bounds dynamic client registration per caller and per host;
	// anyone may register, and each registration is stored for clientIdleLifetime.
	registrations *registrationLimiter
	// regHostRate … regMaxCallers configure registrations (see the options).
	regHostRate, regCallerRate                  float64
	regHostBurst, regCallerBurst, regMaxCallers int
	// trustedProxyHops says which X-Forwarded-For entry names the caller (see
	// callerAddress); 0 trusts none.
	trustedProxyHops int
	// events receives metrics events (WithEvents).
	events Events
	// jwks caches the keys of private_key_jwt clients (jwks.go).
	jwks *jwksCache
	// clients are the pre-registered clients (mcp_clients) by client ID.
	clients map[string]configuredClient
	// upstream chains upstream OAuth before a code is issued (WithUpstream); nil: none.
	upstream Upstream
	// reuseInterval is token_service.refresh_token_reuse_interval; successorKey
	// derives successor refresh tokens (reuse.go).
	reuseInterval time.Duration
	successorKey  []byte
	// unanswered remembers rotations whose store call failed (reuse.go).
	unanswered unanswered
}

// Option configures a Server.
type Option func(*Server)

// WithClock sets the clock (default time.Now).
func WithClock(now func() time.Time) Option { return func(s *Server) { s.now = now } }

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) Option { return func(s *Server) { s.log = l } }

// WithDocumentClient sets the HTTP client that fetches client ID metadata
// documents. The default is NewDocumentClient(DocumentClientOptions{}), which
// refuses to connect to non-public addresses. A replacement should be built
// with NewDocumentClient too.
func WithDocumentClient(c *http.Client) Option { return func(s *Server) { s.docClient = c } }

// WithRegistrationLimit sets how many dynamic client registrations this server accepts
// per route host: perSecond on average, burst at once (defaults: 2 per second, bursts of
// 120). Beyond it the registration endpoint answers 429 with Retry-After. The limit is per
// replica.
func WithRegistrationLimit(perSecond float64, burst int) Option {
	return func(s *Server) { s.regHostRate, s.regHostBurst = perSecond, burst }
}

// WithCallerRegistrationLimit sets how many dynamic client registrations one caller (see
// WithTrustedProxyHops) may make per route host: perSecond on average, burst at once, with
// the budgets of at most maxCallers callers remembered (least recently seen forgotten
// first). Defaults: one per 6 seconds, bursts of 60, 10000 callers. The limit is per replica.
func WithCallerRegistrationLimit(perSecond float64, burst, maxCallers int) Option {
	return func(s *Server) { s.regCallerRate, s.regCallerBurst, s.regMaxCallers = perSecond, burst, maxCallers }
}

// WithTrustedProxyHops sets how many proxies in front of the token service append the
// address they received a request from to X-Forwarded-For; the caller a registration is
// counted against is the address the outermost of them saw. The default is
// token_service.trusted_proxy_hops (0: the header is ignored and the caller is the
// connection's peer). Never set it higher than the real number of proxies: anyone could
// then choose their address by sending the header.
func WithTrustedProxyHops(n int) Option { return func(s *Server) { s.trustedProxyHops = n } }

// New returns a Server for cfg that keeps its state in st and learns the
// user's browser session from sessions.
func New(cfg *config.Config, st store.Store, sessions Sessions, opts ...Option) *Server {
	s := &Server{
		cfg:        cfg,
		store:      st,
		sessions:   sessions,
		now:        time.Now,
		log:        slog.New(slog.NewTextHandler(io.Discard, nil)),
		accessTTL:  cfg.TokenService.AccessTokenLifetime.D(),
		refreshTTL: cfg.TokenService.RefreshTokenLifetime.D(),
		events:     noEvents{},
		clients:    newConfiguredClients(cfg),
	}
	if s.accessTTL <= 0 {
		s.accessTTL = config.DefaultAccessTokenLifetime
	}
	if s.refreshTTL <= 0 {
		s.refreshTTL = config.DefaultRefreshTokenLifetime
	}
	s.regHostRate, s.regHostBurst = defaultRegistrationRate, defaultRegistrationBurst
	s.regCallerRate, s.regCallerBurst = defaultCallerRegistrationRate, defaultCallerRegistrationBurst
	s.regMaxCallers = defaultMaxRegistrationCallers
	s.trustedProxyHops = cfg.TokenService.TrustedProxyHops
	s.reuseInterval = cfg.TokenService.ReuseInterval()
	s.successorKey = cfg.DeriveKey(successorKeyPurpose)
	for _, o := range opts {
		o(s)
	}
	s.registrations = newRegistrationLimiter(s.regHostRate, s.regHostBurst, s.regCallerRate, s.regCallerBurst, s.regMaxCallers)
	if s.docClient == nil {
		s.docClient = NewDocumentClient(DocumentClientOptions{})
	}
	s.docs = newDocumentResolver(s.docClient, s.now, s.log, defaultDocumentCacheSize)
	s.docs.events = s.events
	s.jwks = newJWKSCache(s.docClient, s.now, s.log, defaultJWKSCacheSize)
	return s
}

// notFound answers 404 with a JSON body.
func notFound(w http.ResponseWriter, _ *http.Request, _ *hosts.Host) {
	writeJSON(w, http.StatusNotFound, errorBody{Error: "not_found", Description: "no such endpoint on this host"})
}

// serverRoute returns the mcp.server route of h whose ID is id.
func serverRoute(h *hosts.Host, id string) (*config.Route, bool) {
	for _, rt := range h.ServerRoutes() {
		if rt.Normalized().ID == id {
			return rt, true
		}
	}
	return nil, false
}

// touchClient records a use of a dynamically registered client and extends
// its life, at most once per clientTouchInterval.
func (s *Server) touchClient(ctx context.Context, c store.Client) {
	if c.Kind != store.ClientDynamic {
		return
	}
	now := s.now()
	if !c.LastUsedAt.IsZero() && now.Sub(c.LastUsedAt) < clientTouchInterval {
		return
	}
	if err := s.store.TouchClient(ctx, c.ID, now, now.Add(clientIdleLifetime)); err != nil {
		s.log.WarnContext(ctx, "oauth: record client use", "client_id", c.ID, "error", err)
	}
}
