package plugin

import "strings"

// queryEscape escapes s for a query parameter exactly as url.QueryEscape does
// (FuzzQueryEscape_MatchesNetURL): letters, digits and - _ . ~ stay, a space becomes '+',
// every other byte %XX with upper-case hex. The filter does without net/url, which brought
// net/netip, unique and url.Parse's fmt-formatted errors into the module.
func queryEscape(s string) string {
	const hexUpper = "0123456789ABCDEF"
	n := 0
	for i := 0; i < len(s); i++ {
		if !unreservedByte(s[i]) && s[i] != ' ' {
			n++
		}
	}
	if n == 0 && !strings.Contains(s, " ") {
		return s
	}
	b := make([]byte, 0, len(s)+2*n)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case unreservedByte(c):
			b = append(b, c)
		case c == ' ':
			b = append(b, '+')
		default:
			b = append(b, '%', hexUpper[c>>4], hexUpper[c&0xf])
		}
	}
	return string(b)
}

// queryUnescape decodes a query parameter as url.QueryUnescape does: '+' is a space, %XX
// the byte XX (either case); ok is false, as url.QueryUnescape's error, when a '%' is not
// followed by two hex digits.
func queryUnescape(s string) (string, bool) {
	if !strings.ContainsAny(s, "%+") {
		return s, true
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '%':
			if i+2 >= len(s) || !isHexByte(s[i+1]) || !isHexByte(s[i+2]) {
				return "", false
			}
			b = append(b, unhex(s[i+1])<<4|unhex(s[i+2]))
			i += 2
		case '+':
			b = append(b, ' ')
		default:
			b = append(b, c)
		}
	}
	return string(b), true
}

// unreservedByte reports whether c is unreserved in a URL (RFC 3986): a letter, a digit or
// - _ . ~.
func unreservedByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~'
}

func isHexByte(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}
