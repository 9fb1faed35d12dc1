package session

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/mcpmesh/gateway/shared/checkapi"
	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/tokensvc/hosts"
	"github.com/mcpmesh/gateway/tokensvc/idp"
	"github.com/mcpmesh/gateway/tokensvc/oauth"
	"github.com/mcpmesh/gateway/tokensvc/secret"
	"github.com/mcpmesh/gateway/tokensvc/store"
)

// Cookie names besides checkapi.SessionCookie (the route hosts' session cookie).
const (
	// AuthnCookie is the session cookie of the authenticate host, on authnCookiePath.
	AuthnCookie = "_gateway_authn"
	// SignInCookie is a route host's pre-session nonce: it binds a sign-in started on the
	// route host to the browser that completes the handoff.
	SignInCookie = "_gateway_signin"
	// FlowCookie is the authenticate host's nonce binding the provider's state to the
	// browser that started the sign-in.
	FlowCookie = "_gateway_authn_flow"
)

// authnCookiePath is the Path of AuthnCookie: the directory of paths.AuthenticateSignIn.
var authnCookiePath = path.Dir(paths.AuthenticateSignIn) + "/"

// One-time value kinds (store.OneTime.Kind) and lifetimes. The sign-in state before the
// provider (state.go) is not stored; kindIDPUsed marks a provider state whose sign-in
// completed, written only after the provider redeemed its code.
const (
	kindHandoff = "handoff"
	kindIDPUsed = "idp-state-used"

	signInLifetime  = 10 * time.Minute
	handoffLifetime = 60 * time.Second
)

// SealPurposeIDPTokens is the secret.Sealer purpose of store.Session.IDPTokens.
const SealPurposeIDPTokens = "idp-tokens"

// Manager runs browser sessions. It implements oauth.Sessions and serves the sign-in,
// handoff, callback and sign-out endpoints. It is safe for concurrent use.
type Manager struct {
	store     store.Store
	connector idp.Connector
	hosts     *hosts.Table
	authn     *hosts.Host
	sealer    *secret.Sealer
	flowKey   []byte // derives the provider nonce and PKCE verifier of a sign-in (state.go)
	cookieKey []byte
	lifetime  time.Duration
	now       func() time.Time
	log       *slog.Logger
	refresh   singleflight.Group
}

var _ oauth.Sessions = (*Manager)(nil)

// Option configures a Manager.
type Option func(*Manager)

// WithClock sets the clock (default time.Now).
func WithClock(now func() time.Time) Option { return func(m *Manager) { m.now = now } }

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) Option { return func(m *Manager) { m.log = l } }

// New returns a Manager for cfg. table must be hosts.NewTable(cfg).
func New(cfg *config.Config, st store.Store, connector idp.Connector, table *hosts.Table, opts ...Option) (*Manager, error) {
	u, err := url.Parse(cfg.AuthenticateServiceURL)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("session: authenticate_service_url %q is not an absolute URL", cfg.AuthenticateServiceURL)
	}
	authn := table.Lookup(u.Host)
	if authn == nil || !authn.Authenticate {
		return nil, errors.New("session: the authenticate host is missing from the host table")
	}
	sealer, err := secret.NewSealer(cfg.DeriveKey("seal"))
	if err != nil {
		return nil, fmt.Errorf("session: %w", err)
	}
	key := cfg.CookieKey()
	if len(key) < 32 {
		return nil, errors.New("session: cookie_secret must be 32 bytes")
	}
	m := &Manager{
		store: st, connector: connector, hosts: table, authn: authn, sealer: sealer,
		flowKey: cfg.DeriveKey("session/sign-in-flow"), cookieKey: key, lifetime: cfg.CookieExpiration.D(), now: time.Now,
		log: slog.New(slog.DiscardHandler),
	}
	if m.lifetime <= 0 {
		m.lifetime = config.DefaultCookieExpiration
	}
	for _, o := range opts {
		o(m)
	}
	return m, nil
}

// Current implements oauth.Sessions: the session of r's route-host cookie, or (nil, nil)
// when there is none, it is bound to another host, expired or revoked.
func (m *Manager) Current(r *http.Request) (*store.Session, error) {
	h, ok := hosts.FromContext(r.Context())
	if !ok {
		return nil, errors.New("session: request has no resolved host")
	}
	return m.fromCookie(r, checkapi.SessionCookie, h)
}

// fromCookie returns the live session of cookie name on host h.
func (m *Manager) fromCookie(r *http.Request, name string, h *hosts.Host) (*store.Session, error) {
	value := cookieValue(r, name)
	if value == "" {
		return nil, nil
	}
	now := m.now()
	_, s, err := m.store.GetBrowserCookie(r.Context(), secret.Hash(value), h.Authority, now)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("session: look up cookie: %w", err)
	}
	if !s.RevokedAt.IsZero() || !now.Before(s.ExpiresAt) {
		return nil, nil
	}
	return &s, nil
}

// CSRFToken implements oauth.Sessions: HMAC(cookie_secret, host, hash of the session
// cookie). It is empty when r carries no session cookie.
func (m *Manager) CSRFToken(r *http.Request) string {
	h, ok := hosts.FromContext(r.Context())
	if !ok {
		return ""
	}
	value := cookieValue(r, checkapi.SessionCookie)
	if value == "" {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString(m.csrfMAC(h.Authority, value))
}

// VerifyCSRF implements oauth.Sessions, comparing in constant time.
func (m *Manager) VerifyCSRF(r *http.Request, token string) bool {
	h, ok := hosts.FromContext(r.Context())
	if !ok || token == "" {
		return false
	}
	value := cookieValue(r, checkapi.SessionCookie)
	if value == "" {
		return false
	}
	got, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return false
	}
	return hmac.Equal(got, m.csrfMAC(h.Authority, value))
}

func (m *Manager) csrfMAC(host, cookie string) []byte {
	mac := hmac.New(sha256.New, m.cookieKey)
	mac.Write([]byte("csrf\x00"))
	mac.Write([]byte(host))
	mac.Write([]byte{0})
	mac.Write(secret.Hash(cookie))
	return mac.Sum(nil)
}

// Revalidate implements oauth.Sessions: it refreshes the session's IDP tokens and, when the
// provider agrees, stores the new claims, the (possibly rotated) refresh token and a new
// expiry of now + cookie_expiration. A refusal revokes the session (and its grants) and
// returns an error wrapping oauth.ErrIDPRefused and idp.ErrRefused; a session that is gone
// or revoked returns store.ErrNotFound; other errors are transient. Concurrent calls for one
// session share one refresh.
func (m *Manager) Revalidate(ctx context.Context, sessionID string) (*store.Session, error) {
	v, err, _ := m.refresh.Do(sessionID, func() (any, error) {
		return m.revalidate(context.WithoutCancel(ctx), sessionID)
	})
	if err != nil {
		return nil, err
	}
	s := v.(store.Session)
	return &s, nil
}

func (m *Manager) revalidate(ctx context.Context, id string) (store.Session, error) {
	s, err := m.store.GetSession(ctx, id)
	if err != nil {
		return store.Session{}, fmt.Errorf("revalidate session: %w", err)
	}
	toks, err := m.openTokens(s)
	if err != nil {
		return store.Session{}, m.refuse(ctx, s, err)
	}
	ident, next, err := m.connector.Refresh(ctx, toks)
	if err != nil {
		if !errors.Is(err, idp.ErrRefused) && !errors.Is(err, idp.ErrInvalidResponse) {
			return store.Session{}, fmt.Errorf("revalidate session: %w", err)
		}
		// Another replica may have refreshed first and spent a rotating refresh token.
		if fresh, ok := m.refreshedMeanwhile(ctx, s); ok {
			return fresh, nil
		}
		return store.Session{}, m.refuse(ctx, s, err)
	}
	if ident.Subject != "" && ident.Subject != s.Subject {
		return store.Session{}, m.refuse(ctx, s, fmt.Errorf("%w: the provider answered for another subject", idp.ErrRefused))
	}
	if ident.Subject != "" {
		if ident.Name == "" && s.Name != "" {
			// Some providers name the user only at the first sign-in (apple): keep it.
			ident.Name = s.Name
			if ident.Claims != nil {
				if _, ok := ident.Claims["name"]; !ok {
					ident.Claims["name"] = s.Name
				}
			}
		}
		if err := applyIdentity(&s, ident); err != nil {
			return store.Session{}, fmt.Errorf("revalidate session: %w", err)
		}
	}
	if err := m.sealTokens(&s, next); err != nil {
		return store.Session{}, fmt.Errorf("revalidate session: %w", err)
	}
	s.ExpiresAt = m.now().Add(m.lifetime)
	version, err := m.store.UpdateSession(ctx, s)
	if errors.Is(err, store.ErrConflict) {
		if fresh, ok := m.refreshedMeanwhile(ctx, s); ok {
			return fresh, nil
		}
	}
	if err != nil {
		return store.Session{}, fmt.Errorf("revalidate session: store: %w", err)
	}
	s.Version = version
	s.ExpiresAt = store.Time(s.ExpiresAt)
	s.IDPTokenExpiry = store.Time(s.IDPTokenExpiry)
	return s, nil
}

// refreshedMeanwhile reports whether someone else renewed s since it was read.
func (m *Manager) refreshedMeanwhile(ctx context.Context, s store.Session) (store.Session, bool) {
	fresh, err := m.store.GetSession(ctx, s.ID)
	if err != nil || fresh.Version == s.Version || !m.now().Before(fresh.ExpiresAt) {
		return store.Session{}, false
	}
	return fresh, true
}

// refuse revokes s (and with it its grants) and returns the refusal.
func (m *Manager) refuse(ctx context.Context, s store.Session, cause error) error {
	now := m.now()
	if err := m.store.RevokeSession(ctx, s.ID, now); err != nil && !errors.Is(err, store.ErrNotFound) {
		m.log.ErrorContext(ctx, "revoke refused session", "error", err.Error())
	}
	if _, err := m.store.RevokeGrantsBySession(ctx, s.ID, now); err != nil {
		m.log.ErrorContext(ctx, "revoke grants of refused session", "error", err.Error())
	}
	m.log.InfoContext(ctx, "identity provider refused to revalidate the session; session revoked", "sub", s.Subject, "reason", cause.Error())
	return fmt.Errorf("revalidate session: %w: %w", oauth.ErrIDPRefused, cause)
}

func (m *Manager) openTokens(s store.Session) (idp.Tokens, error) {
	var t idp.Tokens
	raw, err := m.sealer.Open(s.IDPTokens, SealPurposeIDPTokens)
	if err != nil {
		return t, fmt.Errorf("%w: stored IDP tokens cannot be opened: %v", idp.ErrRefused, err)
	}
	if err := json.Unmarshal(raw, &t); err != nil {
		return t, fmt.Errorf("%w: stored IDP tokens are malformed: %v", idp.ErrRefused, err)
	}
	return t, nil
}

func (m *Manager) sealTokens(s *store.Session, t idp.Tokens) error {
	raw, err := json.Marshal(t)
	if err != nil {
		return fmt.Errorf("encode IDP tokens: %w", err)
	}
	s.IDPTokens = m.sealer.Seal(raw, SealPurposeIDPTokens)
	s.IDPTokenExpiry = t.Expiry
	return nil
}

// applyIdentity copies the provider's identity into s.
func applyIdentity(s *store.Session, id idp.Identity) error {
	claims, err := json.Marshal(id.Claims)
	if err != nil {
		return fmt.Errorf("encode claims: %w", err)
	}
	s.Subject, s.Email, s.Name, s.Groups, s.Claims = id.Subject, id.Email, id.Name, id.Groups, claims
	return nil
}

// cookieValue returns the value of cookie name when it looks like one of our tokens.
func cookieValue(r *http.Request, name string) string {
	c, err := r.Cookie(name)
	if err != nil || !plausibleToken(c.Value) {
		return ""
	}
	return c.Value
}

// plausibleToken reports whether v has the shape of secret.NewToken output.
func plausibleToken(v string) bool {
	if len(v) != 43 {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// setCookie sets a host-only cookie on h. maxAge 0 with expires zero makes it a session
// cookie; a negative maxAge deletes it.
func setCookie(w http.ResponseWriter, h *hosts.Host, name, value, path string, expires time.Time, maxAge int, sameSite http.SameSite) {
	http.SetCookie(w, &http.Cookie{
		Name: name, Value: value, Path: path, Expires: expires, MaxAge: maxAge,
		HttpOnly: true, Secure: h.Secure(), SameSite: sameSite,
	})
}

func clearCookie(w http.ResponseWriter, h *hosts.Host, name, path string, sameSite http.SameSite) {
	setCookie(w, h, name, "", path, time.Unix(0, 0), -1, sameSite)
}
