// Package redirecturi owns the rule for the OAuth redirect URIs a client may register with
// the gateway's authorization server: dynamically registered clients, client ID metadata
// documents and operator-configured clients (mcp_clients) alike, and the redirect URI rules
// of each application_type (docs/clients.md "Redirect URIs").
package redirecturi

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// MaxLen bounds a redirect URI.
const MaxLen = 2000

// Validate checks a redirect URI a client wants to register
// (RFC 6749 §3.1.2, RFC 8252 §7, OAuth 2.1 §2.3). Accepted: https URIs; http
// URIs on a loopback host (127.0.0.1, [::1], localhost); private-use scheme
// URIs whose scheme contains a dot (com.example.app:/cb). Refused: relative
// URIs, fragments, userinfo, wildcards, whitespace and control characters,
// percent-encoded hosts, and every other scheme (javascript:, data:, file:…).
func Validate(raw string) error {
	if raw == "" {
		return errors.New("redirect URI is empty")
	}
	if len(raw) > MaxLen {
		return fmt.Errorf("redirect URI is longer than %d bytes", MaxLen)
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
		if !IsLoopbackHost(u.Hostname()) {
			return errors.New("http redirect URIs are allowed only for loopback hosts (127.0.0.1, [::1], localhost); use https")
		}
	default:
		// RFC 8252 §7.1 asks apps for reverse-domain schemes, but MCP clients in use register
		// single-word ones (cursor://, vscode://), so any private-use scheme is accepted except
		// those a browser or the OS gives a meaning of its own. Consent is always asked of such
		// clients, and the consent page shows the redirect target.
		if ForbiddenSchemes[scheme] || len(scheme) < 2 { // "c:/…" reads as a Windows drive
			return errors.New("redirect URI scheme " + scheme + " is not allowed: use https, http on loopback, or an app's private-use scheme")
		}
		if !strings.HasPrefix(u.Path, "/") {
			return errors.New("private-use redirect URI must have a path (com.example.app:/callback)")
		}
	}
	return nil
}

// ForbiddenSchemes are schemes that execute, read local data, or hand the code to
// something other than the registering app.
var ForbiddenSchemes = map[string]bool{
	"javascript": true, "vbscript": true, "data": true, "file": true, "about": true, "blob": true,
	"filesystem": true, "view-source": true, "jar": true, "ws": true, "wss": true, "ftp": true,
	"mailto": true, "tel": true, "sms": true, "intent": true, "urn": true, "chrome": true,
	"resource": true, "moz-extension": true, "chrome-extension": true, "ms-settings": true,
}

// IsLoopbackHost reports whether host (from url.URL.Hostname) is one
// of the loopback hosts RFC 8252 §7.3 allows with http.
func IsLoopbackHost(host string) bool {
	return host == "127.0.0.1" || host == "::1" || host == "localhost"
}

// Application types (OpenID Connect Dynamic Client Registration 1.0 §2, which the MCP
// authorization specification's 2026-07-28 revision uses for registration and client ID
// metadata documents).
const (
	// AppWeb is a web application: its redirect URIs are https, or http on a loopback host
	// (local development); never a private-use scheme.
	AppWeb = "web"
	// AppNative is a native application: its redirect URIs are on a loopback host (http or
	// https, any port) or use a private-use scheme; never an https URL of another host, which
	// a native app cannot prove it receives.
	AppNative = "native"
)

// ValidateFor checks raw with Validate and then against the rule of appType (AppWeb,
// AppNative, or "" for a client that names none, to which only Validate applies, as before
// application_type existed). An unknown appType is refused.
func ValidateFor(raw, appType string) error {
	if err := Validate(raw); err != nil {
		return err
	}
	u, _ := url.Parse(raw) // Validate parsed it
	scheme := strings.ToLower(u.Scheme)
	loopback := (scheme == "http" || scheme == "https") && IsLoopbackHost(u.Hostname())
	switch appType {
	case "":
		return nil
	case AppWeb:
		if scheme != "https" && !loopback {
			return errors.New("a web application's redirect URIs must be https (or http on a loopback host); use application_type native for an app's private-use scheme")
		}
	case AppNative:
		if !loopback && (scheme == "https" || scheme == "http") {
			return errors.New("a native application's redirect URIs must be on a loopback host (127.0.0.1, [::1], localhost) or use a private-use scheme; use application_type web for an https redirect URI")
		}
	default:
		return errors.New("application_type must be web or native")
	}
	return nil
}
