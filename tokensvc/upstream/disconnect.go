// Disconnect: GET paths.Disconnect shows a confirmation form carrying a CSRF token bound to
// the session cookie; its POST removes the user's Internal Tokens of the host's upstream
// routes (or of the one named by route=) and redirects to redirect_url.

package upstream

import (
	"net/http"
	"net/url"

	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/tokensvc/hosts"
)

// DisconnectPage serves GET paths.Disconnect on mcp.server route hosts:
// ?redirect_url=…[&route=…].
func (s *Service) DisconnectPage(w http.ResponseWriter, r *http.Request) {
	_, q, ret, rts, _, ok := s.signedInTarget(w, r, paths.Disconnect)
	if !ok {
		return
	}
	var names []string
	for _, rt := range rts {
		names = append(names, rt.Name)
	}
	msg := "Remove the gateway's access to these services for your account? You can connect again at any time."
	if len(names) == 0 {
		msg = "No service of this host uses an upstream account. Continue to your application?"
	}
	u, _ := url.Parse(ret)
	render(w, r, http.StatusOK, page{Title: "Disconnect", Message: msg, Items: names, Form: &pageForm{
		Action: paths.Disconnect, CSRF: s.sessions.CSRFToken(r), RedirectURL: ret, Route: q.Get("route"),
		Button: "Disconnect", RedirectOrigin: u.Scheme + "://" + u.Host,
	}})
}

// Disconnect serves POST paths.Disconnect on mcp.server route hosts (the form of
// DisconnectPage).
func (s *Service) Disconnect(w http.ResponseWriter, r *http.Request) {
	h := hosts.MustFromContext(r.Context())
	if !sameOrigin(r, h) {
		renderError(w, r, http.StatusForbidden, "Refused", "The disconnect form must be sent from this gateway's own page.")
		return
	}
	if err := r.ParseForm(); err != nil {
		renderError(w, r, http.StatusBadRequest, "Invalid request", "The form could not be read.")
		return
	}
	form := r.PostForm
	ret, rts, ok := s.parseTarget(w, r, h, form)
	if !ok {
		return
	}
	sess, err := s.sessions.Current(r)
	if err != nil {
		s.internalError(w, r, "read session", err)
		return
	}
	if sess == nil {
		renderError(w, r, http.StatusUnauthorized, "Signed out", "You are not signed in here any more. Start again from your application.")
		return
	}
	if !s.sessions.VerifyCSRF(r, form.Get("csrf_token")) {
		renderError(w, r, http.StatusForbidden, "Form expired", "The disconnect form was not issued to this session. Start again from your application.")
		return
	}
	for _, rt := range rts {
		if err := s.DisconnectRoute(r.Context(), sess.Subject, rt.ID); err != nil {
			s.internalError(w, r, "delete upstream token", err)
			return
		}
		s.log.InfoContext(r.Context(), "upstream disconnected", "route_id", rt.ID, "sub", sess.Subject)
	}
	redirect(w, ret)
}

// sameOrigin decides whether a state-changing POST comes from the host's own pages: by
// Sec-Fetch-Site when the browser sends it (only same-origin passes), else by Origin, which
// must be absent or the host's own ("null" is refused).
func sameOrigin(r *http.Request, h *hosts.Host) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" {
		return site == "same-origin"
	}
	origin, ok := r.Header["Origin"]
	if !ok {
		return true
	}
	return len(origin) == 1 && origin[0] == h.Origin
}
