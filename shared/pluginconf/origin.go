package pluginconf

import (
	"net/netip"
	"strings"
)

// originHost returns the lower-case scheme and the host (port included) of raw, the
// authenticate_service_url, as url.Parse returns them in URL.Scheme and URL.Host, for the
// URLs the gateway configuration accepts there: scheme://host[:port] with an optional path,
// query and fragment. It reads only a plain subset, and ok is false outside it: a host of
// letters, digits and . - _ ~ or a bracketed IPv6 address, a port of digits, no user
// information, no percent-escapes anywhere and no control characters. Within that subset it
// agrees with url.Parse (FuzzOriginHost_MatchesURLParse); it spares the wasm filter
// url.Parse, whose errors are formatted by fmt.
func originHost(raw string) (scheme, host string, ok bool) {
	for i := 0; i < len(raw); i++ {
		if c := raw[i]; c < 0x20 || c == 0x7f || c == '%' {
			return "", "", false
		}
	}
	scheme, rest, found := strings.Cut(raw, "://")
	if !found || !validScheme(scheme) {
		return "", "", false
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority := rest[:end]
	name, port := authority, ""
	if strings.HasPrefix(authority, "[") {
		closing := strings.IndexByte(authority, ']')
		if closing < 0 {
			return "", "", false
		}
		name, port = authority[:closing+1], authority[closing+1:]
		addr, err := netip.ParseAddr(name[1:closing])
		if err != nil || addr.Is4() || addr.Zone() != "" || strings.ContainsAny(name[1:closing], "[]") {
			return "", "", false
		}
	} else if i := strings.IndexByte(authority, ':'); i >= 0 {
		name, port = authority[:i], authority[i:]
		for j := 0; j < len(name); j++ {
			if c := name[j]; !isHostByte(c) {
				return "", "", false
			}
		}
	} else {
		for j := 0; j < len(name); j++ {
			if !isHostByte(name[j]) {
				return "", "", false
			}
		}
	}
	if port != "" {
		if port[0] != ':' {
			return "", "", false
		}
		for j := 1; j < len(port); j++ {
			if port[j] < '0' || port[j] > '9' {
				return "", "", false
			}
		}
	}
	return strings.ToLower(scheme), authority, true
}

// validScheme reports whether s is a URL scheme (RFC 3986: a letter, then letters, digits,
// + - .).
func validScheme(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return true
}

// isHostByte reports whether c may appear in a host name of originHost's subset.
func isHostByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '-' || c == '_' || c == '~'
}
