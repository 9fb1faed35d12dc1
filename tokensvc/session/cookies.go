// The route hosts' session cookies: where they live and how they are issued and cleared.

package session

import (
	"errors"
	"net/http"

	"github.com/mcpmesh/gateway/shared/checkapi"
	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/shared/pluginconf"
	"github.com/mcpmesh/gateway/tokensvc/hosts"
	"github.com/mcpmesh/gateway/tokensvc/secret"
	"github.com/mcpmesh/gateway/tokensvc/store"
)

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
