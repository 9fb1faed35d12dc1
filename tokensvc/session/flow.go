package session

import (
	"context"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/mcpmesh/gateway/shared/checkapi"
	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/shared/pluginconf"
	"github.com/mcpmesh/gateway/tokensvc/hosts"
	"github.com/mcpmesh/gateway/tokensvc/idp"
	"github.com/mcpmesh/gateway/tokensvc/secret"
	"github.com/mcpmesh/gateway/tokensvc/store"
)

// signInRequest is a sign-in started on a route host: sealed into the state the route host
// sends to the authenticate host, carried on in idpState and in the hand-over.
type signInRequest struct {
	Host     string `json:"host"`      // route host authority
	ReturnTo string `json:"return_to"` // validated relative path
	Browser  string `json:"browser"`   // base64url SHA-256 of the route host's SignInCookie
}

// idpState is sealed into the state parameter sent to the provider. The OIDC nonce and the
// PKCE verifier are derived from Flow and the FlowCookie (Manager.flowSecret).
type idpState struct {
	Browser string        `json:"browser"` // base64url SHA-256 of the authenticate host's FlowCookie
	Flow    string        `json:"flow"`    // random ID of this sign-in
	SignIn  signInRequest `json:"signin"`
}

// handoff is the payload of kindHandoff.
type handoff struct {
	SessionID string `json:"session_id"`
	signInRequest
}

// SignIn serves paths.SignIn on route hosts: GET ?return_to=/path.
func (m *Manager) SignIn(w http.ResponseWriter, r *http.Request) {
	h, ok := routeHost(w, r)
	if !ok {
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		methodNotAllowed(w, r, "GET")
		return
	}
	returnTo := r.URL.Query().Get("return_to")
	if returnTo == "" {
		returnTo = "/"
	}
	if !ValidReturnTo(returnTo) {
		renderError(w, r, http.StatusBadRequest, "return_to must be a path on this host, such as /app.")
		return
	}
	if s, err := m.Current(r); err == nil && s != nil {
		// Already signed in, yet the filter sent the browser here: its cookie may sit on a
		// path the host no longer uses (the host gained a browser route). Set it afresh where
		// it belongs, or the browser would bounce between the route and sign_in forever.
		if err := m.issueSessionCookie(w, r, h, *s); err != nil {
			m.internalError(w, r, "renew session cookie", err)
			return
		}
		redirect(w, returnTo)
		return
	}
	m.startSignIn(w, r, h, returnTo)
}

// RedirectToSignIn implements oauth.Sessions: it starts a sign-in on r's route host that
// comes back to returnTo (a path and query on that host).
func (m *Manager) RedirectToSignIn(w http.ResponseWriter, r *http.Request, returnTo string) {
	h, ok := routeHost(w, r)
	if !ok {
		return
	}
	if !ValidReturnTo(returnTo) {
		renderError(w, r, http.StatusBadRequest, "The page to return to after sign-in is not a path on this host.")
		return
	}
	m.startSignIn(w, r, h, returnTo)
}

func (m *Manager) startSignIn(w http.ResponseWriter, r *http.Request, h *hosts.Host, returnTo string) {
	// Nothing is stored: the request travels sealed in the state, bound to this browser's
	// pre-session nonce, which the hand-over checks.
	nonce := m.flowNonce(w, r, h, SignInCookie, "/.gateway/", http.SameSiteLaxMode)
	req := signInRequest{Host: h.Authority, ReturnTo: returnTo, Browser: hashString(nonce)}
	state, err := m.sealState(sealPurposeSignInState, req, signInLifetime)
	if err != nil {
		m.internalError(w, r, "seal sign-in state", err)
		return
	}
	redirect(w, m.authn.Origin+paths.AuthenticateSignIn+"?state="+url.QueryEscape(state))
}

// AuthenticateSignIn serves paths.AuthenticateSignIn on the authenticate host: GET ?state=….
func (m *Manager) AuthenticateSignIn(w http.ResponseWriter, r *http.Request) {
	if !m.onAuthn(w, r) {
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		methodNotAllowed(w, r, "GET")
		return
	}
	var req signInRequest
	if err := m.openState(sealPurposeSignInState, r.URL.Query().Get("state"), &req); err != nil {
		renderError(w, r, http.StatusBadRequest, "This sign-in link has expired or is not valid. Go back to the application and sign in again.")
		return
	}
	if h := m.hosts.Lookup(req.Host); h == nil || len(h.Routes) == 0 {
		renderError(w, r, http.StatusBadRequest, "The sign-in request names no configured host.")
		return
	}
	s, err := m.fromCookie(r, AuthnCookie, m.authn)
	if err != nil {
		m.internalError(w, r, "read authenticate session", err)
		return
	}
	if s != nil {
		m.handoff(w, r, s.ID, req)
		return
	}
	// Nothing is stored here either: the state sent to the provider is sealed and bound to
	// the flow cookie, from which (with the state's random Flow) the nonce and the PKCE
	// verifier are derived.
	flow := m.flowNonce(w, r, m.authn, FlowCookie, "/", m.flowSameSite())
	st := idpState{Browser: hashString(flow), Flow: secret.NewToken(), SignIn: req}
	state, err := m.sealState(sealPurposeIdPState, st, signInLifetime)
	if err != nil {
		m.internalError(w, r, "seal provider state", err)
		return
	}
	target, err := m.connector.AuthCodeURL(r.Context(), state, m.flowSecret("nonce", flow, st.Flow), m.flowSecret("pkce", flow, st.Flow))
	if err != nil {
		m.log.ErrorContext(r.Context(), "identity provider unavailable", "error", err.Error())
		h := m.hosts.Lookup(req.Host)
		render(w, r, http.StatusServiceUnavailable, page{
			Title: "Sign-in is unavailable", Message: "The identity provider cannot be reached. Try again in a moment.",
			Link: &pageLink{Href: h.Origin + paths.SignIn + "?return_to=" + url.QueryEscape(req.ReturnTo), Text: "Try again"},
		})
		return
	}
	redirect(w, target)
}

// Callback serves paths.IdPCallback on the authenticate host (GET, or POST for providers
// using response_mode=form_post).
func (m *Manager) Callback(w http.ResponseWriter, r *http.Request) {
	if !m.onAuthn(w, r) {
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodPost {
		methodNotAllowed(w, r, "GET, POST")
		return
	}
	if err := r.ParseForm(); err != nil {
		renderError(w, r, http.StatusBadRequest, "The identity provider's answer could not be read.")
		return
	}
	const over = "This sign-in has expired or was already completed. Go back to the application and sign in again."
	var st idpState
	if err := m.openState(sealPurposeIdPState, r.Form.Get("state"), &st); err != nil {
		renderError(w, r, http.StatusBadRequest, over)
		return
	}
	// Login CSRF: the state must belong to this browser's flow cookie. A refused callback
	// spends nothing: the state stays usable by the browser that started it.
	if !sameBrowser(r, FlowCookie, st.Browser) {
		m.log.WarnContext(r.Context(), "sign-in callback from another browser refused")
		renderError(w, r, http.StatusForbidden, "This sign-in was started in another browser. Start again from the application.")
		return
	}
	// The flow cookie stays: a sign-in in another tab of this browser shares it.
	flow := cookieValue(r, FlowCookie)
	switch _, err := m.store.GetOneTime(r.Context(), secret.Hash(st.Flow), kindIdPUsed, m.now()); {
	case err == nil:
		m.log.WarnContext(r.Context(), "replayed sign-in callback refused")
		renderError(w, r, http.StatusBadRequest, over)
		return
	case !errors.Is(err, store.ErrNotFound):
		m.internalError(w, r, "read provider state", err)
		return
	}
	if e := r.Form.Get("error"); e != "" {
		m.log.InfoContext(r.Context(), "identity provider returned an error", "error", safeCode(e))
		renderError(w, r, http.StatusForbidden, "The identity provider did not sign you in ("+safeCode(e)+").")
		return
	}
	ident, toks, err := m.connector.Exchange(r.Context(), r.Form.Get("code"), m.flowSecret("pkce", flow, st.Flow), m.flowSecret("nonce", flow, st.Flow))
	if err != nil {
		m.log.WarnContext(r.Context(), "sign-in at the identity provider failed", "error", err.Error())
		if errors.Is(err, idp.ErrUnavailable) {
			renderError(w, r, http.StatusServiceUnavailable, "The identity provider cannot be reached. Try again in a moment.")
			return
		}
		renderError(w, r, http.StatusForbidden, "The identity provider's answer could not be verified.")
		return
	}
	if ident.Subject == "" {
		renderError(w, r, http.StatusForbidden, "The identity provider did not name the user.")
		return
	}
	// A state cannot be spent in the browser, and the provider's code is single use and
	// bound to this browser's PKCE verifier, so a replayed callback already fails at the
	// exchange. In case a provider lets a code be redeemed twice, the state is also marked
	// used here, once the provider has signed the user in (never before: that would let
	// anonymous requests write), and a second completion is refused.
	err = m.store.PutOneTime(r.Context(), store.OneTime{
		Hash: secret.Hash(st.Flow), Kind: kindIdPUsed, ExpiresAt: m.now().Add(signInLifetime),
	})
	if errors.Is(err, store.ErrAlreadyExists) {
		m.log.WarnContext(r.Context(), "replayed sign-in callback refused")
		renderError(w, r, http.StatusBadRequest, over)
		return
	}
	if err != nil {
		m.internalError(w, r, "mark provider state used", err)
		return
	}
	s, err := m.createSession(r.Context(), ident, toks)
	if err != nil {
		m.internalError(w, r, "create session", err)
		return
	}
	// The authenticate cookie signs the browser in on every route host: it is scoped to
	// the sign-in path, the only one that reads it, so that no other request to this host
	// name carries it (cookies ignore ports; route hosts may share the name). The clearing
	// drops one a previous version set on /.
	clearCookie(w, m.authn, AuthnCookie, "/", http.SameSiteLaxMode)
	if err := m.issueCookie(w, r, m.authn, AuthnCookie, authnCookiePath, s); err != nil {
		m.internalError(w, r, "create authenticate cookie", err)
		return
	}
	m.log.InfoContext(r.Context(), "signed in", "sub", s.Subject)
	m.handoff(w, r, s.ID, st.SignIn)
}

func (m *Manager) createSession(ctx context.Context, ident idp.Identity, toks idp.Tokens) (store.Session, error) {
	now := m.now()
	s := store.Session{ID: secret.NewToken(), CreatedAt: now, ExpiresAt: now.Add(m.lifetime)}
	if err := applyIdentity(&s, ident); err != nil {
		return s, err
	}
	if err := m.sealTokens(&s, toks); err != nil {
		return s, err
	}
	if err := m.store.CreateSession(ctx, s); err != nil {
		return s, fmt.Errorf("store session: %w", err)
	}
	s.Version = 1
	return s, nil
}

// handoff sends the browser to the route host with a one-time code for session id.
func (m *Manager) handoff(w http.ResponseWriter, r *http.Request, sessionID string, req signInRequest) {
	h := m.hosts.Lookup(req.Host)
	if h == nil {
		renderError(w, r, http.StatusBadRequest, "The sign-in request names no configured host.")
		return
	}
	code := secret.NewToken()
	if err := m.putOneTime(r.Context(), code, kindHandoff, handoff{SessionID: sessionID, signInRequest: req}, handoffLifetime); err != nil {
		m.internalError(w, r, "store handoff", err)
		return
	}
	redirect(w, h.Origin+paths.Handoff+"?code="+url.QueryEscape(code))
}

// Handoff serves paths.Handoff on route hosts: GET ?code=….
func (m *Manager) Handoff(w http.ResponseWriter, r *http.Request) {
	h, ok := routeHost(w, r)
	if !ok {
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		methodNotAllowed(w, r, "GET")
		return
	}
	// Check, then spend: the code is looked up, its host and browser bindings verified, and
	// only then consumed, so that a refused attempt (another browser, another host) cannot
	// burn the code of the browser it was minted for. TakeOneTime keeps it single use.
	const spent = "This sign-in link has expired or was already used. Reload the application to sign in again."
	code := r.URL.Query().Get("code")
	var ho handoff
	if err := m.peekOneTime(r.Context(), code, kindHandoff, &ho); err != nil {
		m.flowError(w, r, err, spent)
		return
	}
	if ho.Host != h.Authority {
		m.log.WarnContext(r.Context(), "handoff code presented on another host refused", "minted_for", ho.Host)
		renderError(w, r, http.StatusBadRequest, "This sign-in link belongs to another site.")
		return
	}
	if !sameBrowser(r, SignInCookie, ho.Browser) {
		m.log.WarnContext(r.Context(), "handoff from another browser refused")
		renderError(w, r, http.StatusForbidden, "This sign-in was started in another browser. Reload the application to sign in again.")
		return
	}
	if _, err := m.store.TakeOneTime(r.Context(), secret.Hash(code), kindHandoff, m.now()); err != nil {
		m.flowError(w, r, err, spent)
		return
	}
	s, err := m.store.GetSession(r.Context(), ho.SessionID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		m.internalError(w, r, "read session", err)
		return
	}
	if err != nil || !s.RevokedAt.IsZero() || !m.now().Before(s.ExpiresAt) {
		m.flowError(w, r, store.ErrNotFound, "Your session has ended. Reload the application to sign in again.")
		return
	}
	if err := m.issueSessionCookie(w, r, h, s); err != nil {
		m.internalError(w, r, "create session cookie", err)
		return
	}
	if !ValidReturnTo(ho.ReturnTo) {
		ho.ReturnTo = "/"
	}
	redirect(w, ho.ReturnTo)
}

// issueSessionCookie sets a route host's session cookie for s on the host's cookie path and
// clears it on the other path, so the browser holds exactly one.
func (m *Manager) issueSessionCookie(w http.ResponseWriter, r *http.Request, h *hosts.Host, s store.Session) error {
	path := sessionCookiePath(h)
	clearCookie(w, h, checkapi.SessionCookie, otherSessionCookiePath(path), http.SameSiteLaxMode)
	return m.issueCookie(w, r, h, checkapi.SessionCookie, path, s)
}

// clearSessionCookie clears a route host's session cookie on both paths it may have.
func clearSessionCookie(w http.ResponseWriter, h *hosts.Host) {
	clearCookie(w, h, checkapi.SessionCookie, "/", http.SameSiteLaxMode)
	clearCookie(w, h, checkapi.SessionCookie, paths.Prefix, http.SameSiteLaxMode)
}

// sessionCookiePath is the Path of a route host's session cookie. A host with mcp.client or
// plain routes needs it on every path: the filter reads it there. A host that serves only
// mcp.server routes needs it on the gateway paths alone (authorization, consent, sign-out),
// and keeping it there keeps it out of requests to its MCP servers, whose upstreams must
// never see a credential they could replay at the authorization endpoint to approve a
// client of their own as the user.
func sessionCookiePath(h *hosts.Host) string {
	for _, rt := range h.Routes {
		if rt.RouteKind() != pluginconf.KindServer {
			return "/"
		}
	}
	return paths.Prefix
}

func otherSessionCookiePath(path string) string {
	if path == "/" {
		return paths.Prefix
	}
	return "/"
}

// issueCookie creates a browser cookie of s bound to h and sets it as cookie name on path.
func (m *Manager) issueCookie(w http.ResponseWriter, r *http.Request, h *hosts.Host, name, path string, s store.Session) error {
	for _, c := range r.CookiesNamed(name) {
		// The browser's previous cookies of that name on this host (one per path) are
		// replaced: forget them.
		if !plausibleToken(c.Value) {
			continue
		}
		if err := m.store.DeleteBrowserCookie(r.Context(), secret.Hash(c.Value)); err != nil && !errors.Is(err, store.ErrNotFound) {
			m.log.WarnContext(r.Context(), "delete replaced browser cookie", "error", err.Error())
		}
	}
	value := secret.NewToken()
	err := m.store.CreateBrowserCookie(r.Context(), store.BrowserCookie{
		Hash: secret.Hash(value), SessionID: s.ID, Host: h.Authority, CreatedAt: m.now(), ExpiresAt: s.ExpiresAt,
	})
	if err != nil {
		return err
	}
	maxAge := int(s.ExpiresAt.Sub(m.now()).Seconds())
	if maxAge < 1 {
		maxAge = 1
	}
	setCookie(w, h, name, value, path, s.ExpiresAt, maxAge, http.SameSiteLaxMode)
	return nil
}

// SignOut serves paths.SignOut on route hosts. GET shows a confirmation form; POST with
// the form's csrf_token revokes the session everywhere (its grants and cookies included),
// clears the cookie and redirects to return_to when it is a path on this host.
func (m *Manager) SignOut(w http.ResponseWriter, r *http.Request) {
	h, ok := routeHost(w, r)
	if !ok {
		return
	}
	s, err := m.Current(r)
	if err != nil {
		m.internalError(w, r, "read session", err)
		return
	}
	returnTo := r.URL.Query().Get("return_to")
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		if s == nil {
			clearSessionCookie(w, h)
			render(w, r, http.StatusOK, page{Title: "Signed out", Message: "You are signed out."})
			return
		}
		if !ValidReturnTo(returnTo) {
			returnTo = ""
		}
		render(w, r, http.StatusOK, page{Title: "Sign out", Message: "Sign out of " + h.Authority + " and every application of this gateway?",
			Form: &pageForm{Action: paths.SignOut, CSRF: m.CSRFToken(r), ReturnTo: returnTo, Button: "Sign out"}})
	case http.MethodPost:
		if err := r.ParseForm(); err != nil {
			renderError(w, r, http.StatusBadRequest, "The sign-out form could not be read.")
			return
		}
		if s != nil {
			if !m.VerifyCSRF(r, r.PostForm.Get("csrf_token")) {
				renderError(w, r, http.StatusForbidden, "The sign-out form has expired. Reload the page and try again.")
				return
			}
			now := m.now()
			if err := m.store.RevokeSession(r.Context(), s.ID, now); err != nil && !errors.Is(err, store.ErrNotFound) {
				m.internalError(w, r, "revoke session", err)
				return
			}
			if _, err := m.store.RevokeGrantsBySession(r.Context(), s.ID, now); err != nil {
				m.internalError(w, r, "revoke grants", err)
				return
			}
			m.log.InfoContext(r.Context(), "signed out", "sub", s.Subject)
		}
		clearSessionCookie(w, h)
		if rt := r.PostForm.Get("return_to"); ValidReturnTo(rt) {
			redirect(w, rt)
			return
		}
		render(w, r, http.StatusOK, page{Title: "Signed out", Message: "You are signed out."})
	default:
		methodNotAllowed(w, r, "GET, POST")
	}
}

// flowNonce returns the browser's flow nonce in cookie name, setting a new one when absent.
// An existing one is kept so sign-ins in several tabs do not invalidate each other; it is
// set again with a fresh expiry, so it lives as long as the state sealed now.
func (m *Manager) flowNonce(w http.ResponseWriter, r *http.Request, h *hosts.Host, name, path string, sameSite http.SameSite) string {
	v := cookieValue(r, name)
	if v == "" {
		v = secret.NewToken()
	}
	setCookie(w, h, name, v, path, m.now().Add(signInLifetime), int(signInLifetime.Seconds()), sameSite)
	return v
}

// flowSameSite is the SameSite of the authenticate host's flow cookie: None on https so it
// survives a response_mode=form_post callback (a cross-site POST), Lax on loopback http
// where None is not allowed without Secure.
func (m *Manager) flowSameSite() http.SameSite {
	if m.authn.Secure() {
		return http.SameSiteNoneMode
	}
	return http.SameSiteLaxMode
}

func (m *Manager) putOneTime(ctx context.Context, value, kind string, payload any, ttl time.Duration) error {
	raw, err := json.Marshal(payload)
	if err != nil {
		return fmt.Errorf("encode %s: %w", kind, err)
	}
	return m.store.PutOneTime(ctx, store.OneTime{Hash: secret.Hash(value), Kind: kind, Payload: raw, ExpiresAt: m.now().Add(ttl)})
}

// peekOneTime decodes the payload of value of kind into v without spending it.
func (m *Manager) peekOneTime(ctx context.Context, value, kind string, v any) error {
	if !plausibleToken(value) {
		return store.ErrNotFound
	}
	one, err := m.store.GetOneTime(ctx, secret.Hash(value), kind, m.now())
	if err != nil {
		return err
	}
	if err := json.Unmarshal(one.Payload, v); err != nil {
		return fmt.Errorf("decode %s: %w", kind, err)
	}
	return nil
}

// sameBrowser reports whether r carries cookie name whose hash is want.
func sameBrowser(r *http.Request, name, want string) bool {
	v := cookieValue(r, name)
	return v != "" && subtle.ConstantTimeCompare([]byte(hashString(v)), []byte(want)) == 1
}

func hashString(v string) string { return base64.RawURLEncoding.EncodeToString(secret.Hash(v)) }

// routeHost returns r's resolved host when it has routes; otherwise it answers 404.
func routeHost(w http.ResponseWriter, r *http.Request) (*hosts.Host, bool) {
	h, ok := hosts.FromContext(r.Context())
	if !ok || len(h.Routes) == 0 {
		renderError(w, r, http.StatusNotFound, "There is no such page on this host.")
		return nil, false
	}
	return h, true
}

func (m *Manager) onAuthn(w http.ResponseWriter, r *http.Request) bool {
	h, ok := hosts.FromContext(r.Context())
	if !ok || h != m.authn {
		renderError(w, r, http.StatusNotFound, "There is no such page on this host.")
		return false
	}
	return true
}

// flowError answers a failed one-time lookup: 400 with message when it is unknown, expired
// or spent, 500 otherwise.
func (m *Manager) flowError(w http.ResponseWriter, r *http.Request, err error, message string) {
	if errors.Is(err, store.ErrNotFound) {
		renderError(w, r, http.StatusBadRequest, message)
		return
	}
	m.internalError(w, r, "sign-in flow", err)
}

func (m *Manager) internalError(w http.ResponseWriter, r *http.Request, what string, err error) {
	m.log.ErrorContext(r.Context(), what, "error", err.Error())
	renderError(w, r, http.StatusInternalServerError, "Something went wrong on our side. Try again in a moment.")
}

func redirect(w http.ResponseWriter, location string) {
	w.Header().Set("Location", location)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusSeeOther)
}

func methodNotAllowed(w http.ResponseWriter, r *http.Request, allow string) {
	w.Header().Set("Allow", allow)
	renderError(w, r, http.StatusMethodNotAllowed, "Method not allowed.")
}

// safeCode keeps an OAuth error code printable and short.
func safeCode(s string) string {
	if len(s) > 64 {
		s = s[:64]
	}
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.' {
			return r
		}
		return -1
	}, s)
}
