package pluginconf

import "strings"

// originHost returns the lower-case scheme and the host (port included) of raw, the
// authenticate_service_url, as url.Parse returns them in URL.Scheme and URL.Host, for the
// URLs the gateway configuration accepts there: scheme://host[:port] with an optional path,
// query and fragment. It reads only a plain subset, and ok is false outside it: a host of
// letters, digits and . - _ ~ or a bracketed IPv6 address, a port of digits, no user
// information, no percent-escapes anywhere and no control characters. Within that subset it
// agrees with url.Parse (FuzzOriginHost_MatchesURLParse); it spares the wasm filter
// net/url (whose errors are formatted by fmt) and net/netip.
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
		if !validIPv6(name[1:closing]) {
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

// validIPv6 reports whether s is an IPv6 address without a zone in the text forms
// netip.ParseAddr accepts (FuzzValidIPv6_MatchesNetip): eight groups of one to four hex
// digits separated by colons, one "::" standing for at least one group of zeros, the last
// two groups possibly written as a dotted IPv4 address (four decimal octets up to 255,
// without leading zeros).
func validIPv6(s string) bool {
	// netip reads text whose first '.' or ':' is a '.' as IPv4.
	if i := strings.IndexAny(s, ".:"); i < 0 || s[i] != ':' {
		return false
	}
	if dot := strings.IndexByte(s, '.'); dot >= 0 {
		c := strings.LastIndexByte(s[:dot], ':')
		if !validIPv4(s[c+1:]) {
			return false
		}
		s = s[:c+1] + "0:0" // the IPv4 address is two groups
	}
	ellipsis := false
	if strings.HasPrefix(s, "::") {
		ellipsis, s = true, s[2:]
		if s == "" {
			return true
		}
	}
	groups := 0
	for {
		n := 0
		for n < len(s) && isHexDigit(s[n]) {
			n++
		}
		if n == 0 || n > 4 {
			return false
		}
		groups++
		if s = s[n:]; s == "" {
			break
		}
		if s[0] != ':' || len(s) == 1 {
			return false
		}
		if s = s[1:]; s[0] == ':' {
			if ellipsis {
				return false
			}
			ellipsis, s = true, s[1:]
			if s == "" {
				break
			}
		}
	}
	return groups == 8 && !ellipsis || groups < 8 && ellipsis
}

// validIPv4 reports whether s is four dot-separated decimal octets, each at most 255 and
// without a leading zero.
func validIPv4(s string) bool {
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return false
	}
	for _, p := range parts {
		if p == "" || len(p) > 3 || len(p) > 1 && p[0] == '0' {
			return false
		}
		n := 0
		for i := 0; i < len(p); i++ {
			if p[i] < '0' || p[i] > '9' {
				return false
			}
			n = n*10 + int(p[i]-'0')
		}
		if n > 255 {
			return false
		}
	}
	return true
}

func isHexDigit(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
