// Sign-out, on a route host: paths.SignOut. GET shows a confirmation form (SignOutPage); the
// POST (SignOut) checks the form's CSRF token against the session cookie before it revokes
// the session and its grants everywhere, and always clears the host's session cookie.

package session

import (
	"errors"
	"net/http"

	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/tokensvc/hosts"
	"github.com/mcpmesh/gateway/tokensvc/store"
)

// SignOutPage serves GET paths.SignOut on route hosts: a confirmation form carrying the
// CSRF token and return_to (when it is a path on this host). A browser without a session is
// told it is signed out and its cookie cleared.
func (m *Manager) SignOutPage(w http.ResponseWriter, r *http.Request) {
	h := hosts.MustFromContext(r.Context())
	s, err := m.Current(r)
	if err != nil {
		m.internalError(w, r, "read session", err)
		return
	}
	if s == nil {
		clearSessionCookie(w, h)
		render(w, r, http.StatusOK, page{Title: "Signed out", Message: "You are signed out."})
		return
	}
	returnTo := r.URL.Query().Get("return_to")
	if !ValidReturnTo(returnTo) {
		returnTo = ""
	}
	render(w, r, http.StatusOK, page{Title: "Sign out", Message: "Sign out of " + h.Authority + " and every application of this gateway?",
		Form: &pageForm{Action: paths.SignOut, CSRF: m.CSRFToken(r), ReturnTo: returnTo, Button: "Sign out"}})
}

// SignOut serves POST paths.SignOut on route hosts: with the form's csrf_token it revokes
// the session everywhere (its grants and cookies included), clears the cookie and redirects
// to return_to when it is a path on this host.
func (m *Manager) SignOut(w http.ResponseWriter, r *http.Request) {
	h := hosts.MustFromContext(r.Context())
	s, err := m.Current(r)
	if err != nil {
		m.internalError(w, r, "read session", err)
		return
	}
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
}
