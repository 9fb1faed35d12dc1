package oauth

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// maxRedirectURILen bounds a redirect URI.
const maxRedirectURILen = 2000

// validateRedirectURI checks a redirect URI a client wants to register
// (RFC 6749 §3.1.2, RFC 8252 §7, OAuth 2.1 §2.3). Accepted: https URIs; http
// URIs on a loopback host (127.0.0.1, [::1], localhost); private-use scheme
// URIs whose scheme contains a dot (com.example.app:/cb). Refused: relative
// URIs, fragments, userinfo, wildcards, whitespace and control characters,
// percent-encoded hosts, and every other scheme (javascript:, data:, file:…).
func validateRedirectURI(raw string) error {
	if raw == "" {
		return errors.New("redirect URI is empty")
	}
	if len(raw) > maxRedirectURILen {
		return fmt.Errorf("redirect URI is longer than %d bytes", maxRedirectURILen)
	}
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; {
		case c <= 0x20 || c >= 0x7f:
			return errors.New("redirect URI contains whitespace, control or non-ASCII characters")
		case c == '#':
			return errors.New("redirect URI must not contain a fragment")
		case c == '*':
			return errors.New("redirect URI must not contain wildcards")
		case c == '\\':
			return errors.New("redirect URI must not contain backslashes")
		}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("redirect URI is not a valid URI")
	}
	if u.Scheme == "" {
		return errors.New("redirect URI must be absolute")
	}
	if u.User != nil || strings.Contains(u.Host, "@") {
		return errors.New("redirect URI must not contain user information")
	}
	if strings.Contains(u.Host, "%") {
		return errors.New("redirect URI host must not be percent-encoded")
	}
	if u.Opaque != "" {
		return errors.New("redirect URI must have a hierarchical path (scheme:/path)")
	}
	switch scheme := strings.ToLower(u.Scheme); scheme {
	case "https":
		if u.Hostname() == "" {
			return errors.New("https redirect URI has no host")
		}
	case "http":
		if !isLoopbackRedirectHost(u.Hostname()) {
			return errors.New("http redirect URIs are allowed only for loopback hosts (127.0.0.1, [::1], localhost); use https")
		}
	default:
		// RFC 8252 §7.1 asks apps for reverse-domain schemes, but MCP clients in use register
		// single-word ones (cursor://, vscode://), so any private-use scheme is accepted except
		// those a browser or the OS gives a meaning of its own. Consent is always asked of such
		// clients, and the consent page shows the redirect target.
		if forbiddenRedirectSchemes[scheme] || len(scheme) < 2 { // "c:/…" reads as a Windows drive
			return errors.New("redirect URI scheme " + scheme + " is not allowed: use https, http on loopback, or an app's private-use scheme")
		}
		if !strings.HasPrefix(u.Path, "/") {
			return errors.New("private-use redirect URI must have a path (com.example.app:/callback)")
		}
	}
	return nil
}

// forbiddenRedirectSchemes are schemes that execute, read local data, or hand the code to
// something other than the registering app.
var forbiddenRedirectSchemes = map[string]bool{
	"javascript": true, "vbscript": true, "data": true, "file": true, "about": true, "blob": true,
	"filesystem": true, "view-source": true, "jar": true, "ws": true, "wss": true, "ftp": true,
	"mailto": true, "tel": true, "sms": true, "intent": true, "urn": true, "chrome": true,
	"resource": true, "moz-extension": true, "chrome-extension": true, "ms-settings": true,
}

// isLoopbackRedirectHost reports whether host (from url.URL.Hostname) is one
// of the loopback hosts RFC 8252 §7.3 allows with http.
func isLoopbackRedirectHost(host string) bool {
	return host == "127.0.0.1" || host == "::1" || host == "localhost"
}

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
	if strings.Contains(redirectURI, "?") {
		sep = "&"
		if strings.HasSuffix(redirectURI, "?") || strings.HasSuffix(redirectURI, "&") {
			sep = ""
		}
	}
	return redirectURI + sep + params.Encode()
}
