package oauth

import (
	"net/url"
	"strings"

	"github.com/mcpmesh/gateway/shared/redirecturi"
)

// maxRedirectURILen bounds a redirect URI.
const maxRedirectURILen = redirecturi.MaxLen

// validateRedirectURI checks a redirect URI a client wants to register (shared/redirecturi).
func validateRedirectURI(raw string) error { return redirecturi.Validate(raw) }

// isLoopbackRedirectHost reports whether host is one of the loopback hosts RFC 8252 §7.3
// allows with http.
func isLoopbackRedirectHost(host string) bool { return redirecturi.IsLoopbackHost(host) }

// forbiddenRedirectSchemes are the schemes redirecturi refuses.
var forbiddenRedirectSchemes = redirecturi.ForbiddenSchemes

// matchRedirectURI reports whether requested is one of registered: an exact
// string match, or — for http loopback URIs only (RFC 8252 §7.3) — a match
// of everything but the port.
func matchRedirectURI(registered []string, requested string) bool {
	for _, r := range registered {
		if r == requested {
			return true
		}
	}
	if validateRedirectURI(requested) != nil {
		return false
	}
	req, err := url.Parse(requested)
	if err != nil || req.Scheme != "http" || !isLoopbackRedirectHost(req.Hostname()) {
		return false
	}
	for _, r := range registered {
		reg, err := url.Parse(r)
		if err != nil || reg.Scheme != "http" || !isLoopbackRedirectHost(reg.Hostname()) {
			continue
		}
		if reg.Hostname() == req.Hostname() && reg.EscapedPath() == req.EscapedPath() &&
			reg.RawQuery == req.RawQuery && reg.ForceQuery == req.ForceQuery && reg.User == nil {
			return true
		}
	}
	return false
}

// withQuery returns redirectURI with params appended to its query, keeping
// the query it already has (RFC 6749 §3.1.2).
func withQuery(redirectURI string, params url.Values) string {
	sep := "?"
	if i := strings.IndexByte(redirectURI, '?'); i >= 0 {
		// The query is what follows the first "?": append to it with "&" unless it is empty or
		// already ends with one ("cb??" has the query "?", so the result is "cb??&code=…").
		sep = "&"
		if q := redirectURI[i+1:]; q == "" || strings.HasSuffix(q, "&") {
			sep = ""
		}
	}
	return redirectURI + sep + params.Encode()
}
