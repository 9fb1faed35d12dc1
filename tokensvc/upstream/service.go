package upstream

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/shared/policy"
	"github.com/mcpmesh/gateway/tokensvc/check"
	"github.com/mcpmesh/gateway/tokensvc/hosts"
	"github.com/mcpmesh/gateway/tokensvc/internal/netguard"
	"github.com/mcpmesh/gateway/tokensvc/secret"
	"github.com/mcpmesh/gateway/tokensvc/store"
)

// Sessions is the browser-session service the connect flow needs (session.Manager).
type Sessions interface {
	// Current returns the live browser session of r on its host, or (nil, nil).
	Current(r *http.Request) (*store.Session, error)
	// RedirectToSignIn sends the browser through sign-in and back to returnTo, a path and
	// query on r's host.
	RedirectToSignIn(w http.ResponseWriter, r *http.Request, returnTo string)
	// CSRFToken returns a form token bound to r's browser session cookie.
	CSRFToken(r *http.Request) string
	// VerifyCSRF reports whether token was made by CSRFToken for r's browser session.
	VerifyCSRF(r *http.Request, token string) bool
}

// Route is an mcp.server route with upstream_oauth2 or upstream_discovery.
type Route struct {
	ID     string // normalised from: the key of its Internal Tokens
	Name   string // display name
	Origin string // scheme://host[:port] of from
	Host   string // normalised authority of from
	To     string // the upstream (probed by discovery)
	// Config is the route's upstream_oauth2, nil on an upstream_discovery route.
	Config *config.UpstreamOAuth2
	// Discovery is the route's upstream_discovery, nil on an upstream_oauth2 route.
	Discovery *config.UpstreamDiscovery
	Policy    *policy.Policy
	// detected remembers the auth style that worked when auth_style is unset.
	detected atomic.Int32
}

// CallbackURL is the redirect URI of rt's flows (register it at the provider).
func (rt *Route) CallbackURL() string { return rt.Origin + paths.UpstreamCallback }

// Service runs the connect flow and keeps the Internal Tokens. It is safe for concurrent use.
type Service struct {
	routes        map[string]*Route
	byHost        map[string][]*Route // upstream routes by host authority
	clientOrigins map[string]bool     // origins of mcp.client routes (redirect_url targets)
	store         store.Store
	sealer        *secret.Sealer
	sessions      Sessions
	stateKey      []byte
	http          *http.Client  // token endpoint calls of upstream_oauth2 routes
	disc          *discoverer   // discovery, and the calls of upstream_discovery routes
	callTimeout   time.Duration // CallTimeout; shorter in tests
	now           func() time.Time
	log           *slog.Logger
	events        Events

	mu      sync.Mutex
	flights map[flightKey]*flight
	pending map[flightKey]Token // refreshed TIs the store has not taken yet (keepPending)
}

// Option configures a Service.
type Option func(*Service)

// WithClock sets the clock (default time.Now).
func WithClock(now func() time.Time) Option { return func(s *Service) { s.now = now } }

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) Option { return func(s *Service) { s.log = l } }

// WithHTTPClient sets the client of token endpoint calls (default: CallTimeout, no
// redirects). A replacement must not follow redirects.
func WithHTTPClient(c *http.Client) Option { return func(s *Service) { s.http = c } }

// WithDiscoveryClient sets the client of every call of upstream_discovery routes (default:
// netguard.NewClient: public addresses only, no redirects). Tests pass a netguard client
// with an injected dialer.
func WithDiscoveryClient(c *http.Client) Option { return func(s *Service) { s.disc.client = c } }

// WithInsecureLoopbackDiscovery lets upstream_discovery routes reach loopback addresses, over
// plain http too: for the local gateway's -insecure-loopback-upstream-discovery flag and
// tests whose upstream runs on this machine, never for production (docs/upstream-discovery.md).
// Private and link-local addresses stay refused.
func WithInsecureLoopbackDiscovery() Option {
	return func(s *Service) {
		s.disc.loopbackHTTP = true
		s.disc.client = netguard.NewClient(netguard.ClientOptions{
			Timeout:   CallTimeout,
			AllowAddr: func(a netip.Addr) bool { return netguard.PublicAddr(a) || a.Unmap().IsLoopback() },
		})
	}
}

// New returns the Service of a validated cfg. sealer seals the Internal Tokens (key derived
// from shared_secret).
func New(cfg *config.Config, st store.Store, sealer *secret.Sealer, sessions Sessions, opts ...Option) *Service {
	s := &Service{
		routes: map[string]*Route{}, byHost: map[string][]*Route{}, clientOrigins: map[string]bool{},
		store: st, sealer: sealer, sessions: sessions, stateKey: cfg.DeriveKey("upstream-connect-state"),
		http: newHTTPClient(), callTimeout: CallTimeout, now: time.Now, log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		flights: map[flightKey]*flight{}, events: noEvents{}, disc: newDiscoverer(cfg),
	}
	for i := range cfg.Routes {
		r := &cfg.Routes[i]
		n := r.Normalized()
		if r.MCP != nil && r.MCP.Client != nil {
			s.clientOrigins[n.Scheme+"://"+n.Host] = true
		}
		if r.MCP == nil || !r.MCP.Server.HasUpstream() {
			continue
		}
		pol, _ := policy.Parse(r.Policy)
		name := r.Name
		if name == "" {
			name = n.ID
		}
		rt := &Route{ID: n.ID, Name: name, Origin: n.Scheme + "://" + n.Host, Host: n.Host, To: r.To,
			Config: r.MCP.Server.UpstreamOAuth2, Discovery: r.MCP.Server.UpstreamDiscovery, Policy: pol}
		s.routes[rt.ID] = rt
		s.byHost[rt.Host] = append(s.byHost[rt.Host], rt)
	}
	for _, o := range opts {
		o(s)
	}
	s.disc.now, s.disc.timeout = s.now, s.callTimeout
	return s
}

// discoveryOrigin returns the origin of r's host when it has an upstream_discovery route.
func (s *Service) discoveryOrigin(r *http.Request) (string, bool) {
	h, ok := hosts.FromContext(r.Context())
	if !ok {
		return "", false
	}
	for _, rt := range s.byHost[h.Authority] {
		if rt.Discovery != nil {
			return rt.Origin, true
		}
	}
	return "", false
}

// Route returns the upstream route whose ID is id.
func (s *Service) Route(id string) (*Route, bool) {
	rt, ok := s.routes[id]
	return rt, ok
}

// HostRoutes returns the upstream routes of host h.
func (s *Service) HostRoutes(h *hosts.Host) []*Route { return s.byHost[h.Authority] }

// Allowed reports whether the policy of rt lets the user of sess use it at all: the request
// the listing evaluates (initialize, not a tool call).
func Allowed(rt *Route, sess *store.Session) bool {
	if rt.Policy == nil {
		return false
	}
	id := check.Identity(sess)
	return rt.Policy.Evaluate(&policy.Input{
		Authenticated: true, User: id.Subject, Email: id.Email, Name: id.Name,
		Groups: id.Groups, Claims: id.Claims, MCPMethod: "initialize",
	}).Allow
}

// needed returns the routes among rts that the user of sess may use and has no usable
// Internal Token for.
func (s *Service) needed(ctx context.Context, sess *store.Session, rts []*Route) ([]*Route, error) {
	return s.neededWith(ctx, sess, rts, nil)
}

// neededWith is needed where a usable Internal Token must also have been granted every
// scope of extra (a step-up).
func (s *Service) neededWith(ctx context.Context, sess *store.Session, rts []*Route, extra []string) ([]*Route, error) {
	var out []*Route
	for _, rt := range rts {
		if !Allowed(rt, sess) {
			continue
		}
		t, err := s.load(ctx, sess.Subject, rt.ID)
		switch {
		case errors.Is(err, ErrUpstreamRequired):
			out = append(out, rt)
		case err != nil:
			return nil, err
		case !valid(t, s.now()) && t.RefreshToken == "":
			out = append(out, rt)
		case !grants(t.Scope, extra):
			out = append(out, rt)
		}
	}
	return out, nil
}

// grants reports whether a granted scope holds every scope of want.
func grants(granted string, want []string) bool { return len(ungranted(granted, want)) == 0 }

// ungranted returns the scopes of want that a granted scope does not hold.
func ungranted(granted string, want []string) []string {
	have := strings.Fields(granted)
	var out []string
	for _, w := range want {
		if !slices.Contains(have, w) {
			out = append(out, w)
		}
	}
	return out
}

// sealPurpose binds a sealed TI to its user and route: a row copied to another user or route
// does not open.
func sealPurpose(subject, routeID string) string {
	return "upstream-token\x00" + routeID + "\x00" + subject
}

// pkceVerifier derives the PKCE verifier of a connect state: nothing secret is stored.
func (s *Service) pkceVerifier(state string) string {
	m := hmac.New(sha256.New, s.stateKey)
	m.Write([]byte("pkce\x00"))
	m.Write([]byte(state))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func pkceChallenge(verifier string) string {
	h := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(h[:])
}

var errNoRoute = errors.New("upstream: not an upstream_oauth2 or upstream_discovery route")
