// Step 1 of sign-in (see the package doc), on a route host: paths.SignIn, and
// Manager.RedirectToSignIn for the authorization server. It checks that return_to is a path
// on this host, sets the route host's pre-session nonce (SignInCookie) and sends the browser
// to the authenticate host with the sign-in request sealed in the state. Nothing is stored.

package session

import (
	"net/http"
	"net/url"

	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/tokensvc/hosts"
	"github.com/mcpmesh/gateway/tokensvc/secret"
)

// signInRequest is a sign-in started on a route host: sealed into the state the route host
// sends to the authenticate host, carried on in idpState and in the hand-over.
type signInRequest struct {
	Host     string `json:"host"`      // route host authority
	ReturnTo string `json:"return_to"` // validated relative path
	Browser  string `json:"browser"`   // base64url SHA-256 of the route host's SignInCookie
}

// SignIn serves paths.SignIn on route hosts: GET ?return_to=/path.
func (m *Manager) SignIn(w http.ResponseWriter, r *http.Request) {
	h := hosts.MustFromContext(r.Context())
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
	h := hosts.MustFromContext(r.Context())
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
