// Steps 4 and 5 of sign-in (see the package doc): the hand-over of a session from the
// authenticate host to the route host. The authenticate host stores a one-time code (60 s)
// naming the session, the route host and the pre-session nonce's hash; paths.Handoff on the
// route host checks the code was minted for this host and this browser before spending it,
// checks the session is live, and sets the host's own session cookie.

package session

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/tokensvc/hosts"
	"github.com/mcpmesh/gateway/tokensvc/secret"
	"github.com/mcpmesh/gateway/tokensvc/store"
)

// handoff is the payload of kindHandoff.
type handoff struct {
	SessionID string `json:"session_id"`
	signInRequest
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
	h := hosts.MustFromContext(r.Context())
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
