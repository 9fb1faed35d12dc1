package pluginconf

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// normalizeAuthority returns the table key of an authority: lower case, without user
// information, without trailing dots on the host name, with the port in canonical decimal
// form and dropped when it is the default of the scheme that host's routes use. wellFormed
// is false when the port is not a port number at all.
func (t *Table) normalizeAuthority(a string) (key string, wellFormed bool) {
	if isPlainHostName(a) {
		return a, true // what the steps below would return: nothing to change
	}
	a = strings.ToLower(a)
	if i := strings.LastIndexByte(a, '@'); i >= 0 {
		// user@host: nothing to do with the host; some routers still match the host part.
		a = a[i+1:]
	}
	host, port := splitHostPort(a)
	host = strings.TrimRight(host, ".")
	if port == "" {
		return host, true
	}
	port, wellFormed = canonicalPort(port)
	full := host + ":" + port
	if _, ok := t.byHost[full]; ok {
		return full, wellFormed
	}
	if s, ok := t.scheme[host]; ok && ((port == "443" && s == "https") || (port == "80" && s == "http")) {
		return host, wellFormed
	}
	return full, wellFormed
}

// isPlainHostName reports whether a is a host name that normalizeAuthority keeps as it is:
// lower-case ASCII letters, digits, '-' and '.', not ending in '.' (no port, no user
// information). Most requests' authorities are; they skip the lower-casing, the splits and
// the trims, each a call in the wasm filter.
func isPlainHostName(a string) bool {
	if a == "" || a[len(a)-1] == '.' {
		return false
	}
	for i := 0; i < len(a); i++ {
		if c := a[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// canonicalRouteHost is a route's host as a table key: lower case, without trailing dots,
// the port in canonical form and dropped when it is the default of the route's scheme.
func canonicalRouteHost(h, scheme string) string {
	host, port := splitHostPort(strings.ToLower(h))
	host = strings.TrimRight(host, ".")
	if port == "" {
		return host
	}
	if p, ok := canonicalPort(port); ok {
		port = p
	}
	if (scheme == "https" && port == "443") || (scheme == "http" && port == "80") {
		return host
	}
	return host + ":" + port
}

// splitHostPort splits host[:port], IPv6 literals in brackets included; port is "" when
// there is none.
func splitHostPort(a string) (host, port string) {
	i := strings.LastIndexByte(a, ':')
	if i < 0 || strings.Contains(a[i:], "]") {
		return a, ""
	}
	return a[:i], a[i+1:]
}

// canonicalPort drops leading zeros from a decimal port. ok is false when p is not a port
// number (empty, not decimal, or above 65535).
func canonicalPort(p string) (string, bool) {
	if p == "" {
		return p, false
	}
	n := 0
	for i := 0; i < len(p); i++ {
		if p[i] < '0' || p[i] > '9' {
			return p, false
		}
		if n = n*10 + int(p[i]-'0'); n > 65535 {
			return p, false
		}
	}
	q := strings.TrimLeft(p, "0")
	if q == "" {
		q = "0"
	}
	return q, true
}

// loosePath is path as the most lenient upstream could read it: every percent-escape
// decoded, path parameters (";…" up to the next "/") and trailing dots and spaces of each
// segment dropped. Route matching compares it to the routes' prefixes, in the same form,
// ignoring case (prefixMatchesFold).
func loosePath(p string) string {
	if !needsLoosening(p) {
		return p
	}
	b := make([]byte, 0, len(p))
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c == '%' && i+2 < len(p) && isHex(p[i+1]) && isHex(p[i+2]) {
			c = unhex(p[i+1])<<4 | unhex(p[i+2])
			i += 2
		}
		b = append(b, c)
	}
	segs := strings.Split(string(b), "/")
	for i, s := range segs {
		if j := strings.IndexByte(s, ';'); j >= 0 {
			s = s[:j]
		}
		if t := strings.TrimRight(s, ". "); t != "" {
			s = t
		}
		segs[i] = s
	}
	return strings.Join(segs, "/")
}

// needsLoosening reports whether loosePath would change p: it holds an escape, a path
// parameter, or a segment ending in a dot or a space.
func needsLoosening(p string) bool {
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '%', ';':
			return true
		case '.', ' ':
			if i+1 == len(p) || p[i+1] == '/' {
				return true
			}
		}
	}
	return false
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// prefixMatchesFold is PrefixMatches under Unicode case folding, with the dotted and dotless
// i folded to i as well (as ToUpper(ToLower(r)) does in Go's encoding/json and .NET's
// invariant upper-casing).
func prefixMatchesFold(prefix, path string) bool {
	if prefix == "/" {
		return true
	}
	for prefix != "" {
		if path == "" {
			return false
		}
		if a, b := prefix[0], path[0]; a < utf8.RuneSelf && b < utf8.RuneSelf {
			// Two ASCII bytes fold together exactly when they are equal in ASCII lower
			// case: no other ASCII byte is in the folding orbit of an ASCII letter.
			if lowerASCII(a) != lowerASCII(b) {
				return false
			}
			prefix, path = prefix[1:], path[1:]
			continue
		}
		a, n := utf8.DecodeRuneInString(prefix)
		b, m := utf8.DecodeRuneInString(path)
		if !foldEqual(a, b) {
			return false
		}
		prefix, path = prefix[n:], path[m:]
	}
	return path == "" || path[0] == '/'
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func foldEqual(a, b rune) bool {
	if a == b {
		return true
	}
	a, b = foldI(a), foldI(b)
	if a == b {
		return true
	}
	for r := unicode.SimpleFold(a); r != a; r = unicode.SimpleFold(r) {
		if r == b {
			return true
		}
	}
	return false
}

func foldI(r rune) rune {
	if r == 'ı' || r == 'İ' {
		return 'i'
	}
	return r
}
