// Steps 2 and 3 of sign-in (see the package doc), on the authenticate host.
// paths.AuthenticateSignIn opens the route host's sealed state, checks it names a configured
// host, and either hands over at once (a live AuthnCookie) or binds a provider state to this
// browser's FlowCookie and redirects to the identity provider. paths.IDPCallback checks the
// state is sealed, belongs to this browser's flow cookie and was not completed before,
// exchanges the code with the derived PKCE verifier and nonce, marks the state used, and
// creates the session and the authenticate host's cookie before the hand-over.

package session

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/tokensvc/idp"
	"github.com/mcpmesh/gateway/tokensvc/oauth"
	"github.com/mcpmesh/gateway/tokensvc/secret"
	"github.com/mcpmesh/gateway/tokensvc/store"
)

// idpState is sealed into the state parameter sent to the provider. The OIDC nonce and the
// PKCE verifier are derived from Flow and the FlowCookie (Manager.flowSecret).
type idpState struct {
	Browser string        `json:"browser"` // base64url SHA-256 of the authenticate host's FlowCookie
	Flow    string        `json:"flow"`    // random ID of this sign-in
	SignIn  signInRequest `json:"signin"`
}

// AuthenticateSignIn serves paths.AuthenticateSignIn on the authenticate host: GET ?state=….
func (m *Manager) AuthenticateSignIn(w http.ResponseWriter, r *http.Request) {
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
	state, err := m.sealState(sealPurposeIDPState, st, signInLifetime)
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

// Callback serves paths.IDPCallback on the authenticate host (GET, or POST for providers
// using response_mode=form_post).
func (m *Manager) Callback(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		renderError(w, r, http.StatusBadRequest, "The identity provider's answer could not be read.")
		return
	}
	const over = "This sign-in has expired or was already completed. Go back to the application and sign in again."
	var st idpState
	if err := m.openState(sealPurposeIDPState, r.Form.Get("state"), &st); err != nil {
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
	switch _, err := m.store.GetOneTime(r.Context(), secret.Hash(st.Flow), kindIDPUsed, m.now()); {
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
	// Apple posts the user's name once, with the first sign-in's form_post, in "user"; only
	// a POST body carries it (idp.WithUserParam).
	ctx := r.Context()
	if r.Method == http.MethodPost {
		ctx = idp.WithUserParam(ctx, r.PostForm.Get("user"))
	}
	ident, toks, err := m.connector.Exchange(ctx, r.Form.Get("code"), m.flowSecret("pkce", flow, st.Flow), m.flowSecret("nonce", flow, st.Flow))
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
	if ReservedSubject(ident.Subject) {
		// Service identities (OAuth clients signing in as themselves) are named client:…;
		// a provider account of that name could pass for one in policies and records.
		m.log.WarnContext(r.Context(), "sign-in refused: the provider's subject has the form of a service identity", "sub_prefix", ServiceSubjectPrefix)
		renderError(w, r, http.StatusForbidden, "The identity provider named a user the gateway reserves for service identities.")
		return
	}
	// A state cannot be spent in the browser, and the provider's code is single use and
	// bound to this browser's PKCE verifier, so a replayed callback already fails at the
	// exchange. In case a provider lets a code be redeemed twice, the state is also marked
	// used here, once the provider has signed the user in (never before: that would let
	// anonymous requests write), and a second completion is refused.
	err = m.store.PutOneTime(r.Context(), store.OneTime{
		Hash: secret.Hash(st.Flow), Kind: kindIDPUsed, ExpiresAt: m.now().Add(signInLifetime),
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

// ServiceSubjectPrefix starts the subject of a service identity (an OAuth client signing in
// as itself); no user of the identity provider may have such a subject.
const ServiceSubjectPrefix = oauth.ServiceSubjectPrefix

// ReservedSubject reports whether a provider's subject has the form of a service identity.
func ReservedSubject(sub string) bool {
	return len(sub) >= len(ServiceSubjectPrefix) && strings.EqualFold(sub[:len(ServiceSubjectPrefix)], ServiceSubjectPrefix)
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
