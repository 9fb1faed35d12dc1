package upstream

import (
	"net/url"
	"strings"

	"github.com/mcpmesh/gateway/tokensvc/hosts"
)

// maxRedirectURL bounds a redirect_url.
const maxRedirectURL = 2048

// CheckRedirectURL validates the redirect_url of paths.Connect and paths.Disconnect: an
// absolute http(s) URL whose origin is the origin of an mcp.client route (clientOrigins,
// scheme://normalised authority). It returns the URL to redirect to, rebuilt from its parsed
// parts with the host normalised, so the browser goes where the check looked; ok is false
// for anything else (relative, other schemes, credentials, control characters, backslashes,
// look-alike or foreign hosts).
func CheckRedirectURL(raw string, clientOrigins map[string]bool) (string, bool) {
	if raw == "" || len(raw) > maxRedirectURL {
		return "", false
	}
	for i := 0; i < len(raw); i++ {
		if c := raw[i]; c <= 0x20 || c >= 0x7f || c == '\\' {
			return "", false
		}
	}
	u, err := url.Parse(raw)
	if err != nil || u.Opaque != "" || u.User != nil || u.Host == "" {
		return "", false
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", false
	}
	if !strings.HasPrefix(raw, u.Scheme+"://") {
		return "", false // a scheme in another case, or a missing "//"
	}
	if strings.ContainsAny(u.Host, "%@") {
		return "", false
	}
	host := hosts.Normalize(u.Host, u.Scheme)
	if !clientOrigins[u.Scheme+"://"+host] {
		return "", false
	}
	u.Host = host
	if u.Path == "" {
		u.Path = "/"
	}
	return u.String(), true
}
