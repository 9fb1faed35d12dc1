package session

import (
	"net/url"
	"strings"
)

// maxReturnTo bounds return_to.
const maxReturnTo = 4096

// ValidReturnTo reports whether s is a safe same-host redirect target: a path starting with
// "/" (not "//" or "/\"), without a scheme, authority, backslash or control character.
// Browsers drop tabs and newlines and read "\" as "/", so "/\t/evil.com" and "/\evil.com"
// would leave the host; they are refused.
func ValidReturnTo(s string) bool {
	if s == "" || len(s) > maxReturnTo || s[0] != '/' {
		return false
	}
	if strings.HasPrefix(s, "//") || strings.ContainsRune(s, '\\') {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f {
			return false
		}
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" {
		return false
	}
	return strings.HasPrefix(u.Path, "/") && !strings.HasPrefix(u.Path, "//")
}
