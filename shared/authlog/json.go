package authlog

import (
	"math/bits"
	"strings"
	"unicode/utf8"

	"github.com/mcpmesh/gateway/shared/jsontext"
	"github.com/mcpmesh/gateway/shared/policy"
)

// The JSON values of a record: strings, reason lists and tool parameters, written so that
// nothing a request holds can break the record's line or its JSON.

func appendBool(dst []byte, b bool) []byte {
	if b {
		return append(dst, "true"...)
	}
	return append(dst, "false"...)
}

// appendReasons appends rs as a JSON list of names, in the order of rs.All. It visits only the
// reasons in the set, not every possible one through the iterator (in the wasm filter that
// was about a thousand instructions a list).
func appendReasons(dst []byte, rs policy.Reasons) []byte {
	dst = append(dst, '[')
	for x := uint32(rs & knownReasons); x != 0; x &= x - 1 {
		dst = append(dst, reasonJSON[bits.TrailingZeros32(x)]...)
		if x&(x-1) != 0 {
			dst = append(dst, ',')
		}
	}
	return append(dst, ']')
}

// knownReasons is the set of every reason policy defines (Add ignores the others).
var knownReasons = func() (all policy.Reasons) {
	for r := range 32 {
		all = all.Add(policy.Reason(r))
	}
	return all
}()

// reasonJSON holds the name of every reason as a JSON string, escaped once at start-up
// (policy.Reasons is a set of at most 32).
var reasonJSON = func() (names [32]string) {
	for r := range names {
		names[r] = string(appendString(nil, policy.Reason(r).String()))
	}
	return names
}()

const hex = "0123456789abcdef"

// appendString appends s as a JSON string. Control characters (C0 and C1), quotes and
// backslashes are escaped, U+2028 and U+2029 too: line-oriented readers split records at NEL
// (U+0085) and the Unicode separators as well as at LF. Invalid UTF-8 becomes U+FFFD.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	dst = appendStringContent(dst, s)
	return append(dst, '"')
}

func appendStringContent(dst []byte, s string) []byte {
	start := 0
	for i := 0; ; {
		// Runs of bytes that need nothing are copied whole: the common case, a string
		// with nothing to escape, is one scan and one copy.
		if i = specialIndex(s, i); i == len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		if isLineBreaking(r) {
			dst = append(dst, s[start:i]...)
			dst = appendRuneEscape(dst, r)
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(dst, s[start:]...)
}

// isLineBreaking reports whether a non-ASCII rune is one that some reader of a log takes for
// the end of a line or a terminal control: the C1 controls U+0080–U+009F (NEL, U+0085, among
// them) and the Unicode line and paragraph separators.
func isLineBreaking(r rune) bool { return r >= 0x80 && r <= 0x9f || r == '\u2028' || r == '\u2029' }

// appendRuneEscape appends r (below U+10000) as a \uXXXX escape.
func appendRuneEscape(dst []byte, r rune) []byte {
	return append(dst, '\\', 'u', hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf])
}

// appendObject appends raw, a JSON object, without insignificant whitespace, with its
// strings sanitised like appendString's and the values of the keys r redacts replaced; anything
// but a valid JSON object is written as null.
func appendObject(dst []byte, raw string, r *redactor) []byte {
	if !jsontext.ValidString(raw) {
		return append(dst, "null"...)
	}
	return appendValidatedObject(dst, raw, r)
}

// maxObjectDepth bounds the nesting appendValidatedObject follows (the filter refuses
// bodies nested deeper than 1000).
const maxObjectDepth = 1024

// appendValidatedObject appends raw, which should be one valid JSON object, like appendObject
// but without validating it first. It still checks what keeps the record one line with the
// value inside its field, whatever raw holds: the text is a single object whose brackets
// match, its strings end, and no control character or non-ASCII byte appears outside a string
// (control characters inside one are invalid JSON too). Otherwise it writes null. A redacted
// value is skipped unread (never written) and replaced with "[redacted]".
func appendValidatedObject(dst []byte, raw string, r *redactor) []byte {
	start := len(dst)
	null := func() []byte { return append(dst[:start], "null"...) }
	i := skipSpace(raw, 0)
	if i == len(raw) || raw[i] != '{' {
		return null()
	}
	r.reset()
	// inArray has one bit per open bracket: set for '[', clear for '{'.
	var inArray [maxObjectDepth / 64]uint64
	depth := 0
	// expectKey: the next string is a member name; redactNext: the value after the next
	// colon is redacted.
	expectKey, redactNext := false, false
	for i < len(raw) {
		switch c := raw[i]; {
		case c == '"':
			end, nonASCII, ok := scanString(raw, i+1)
			if !ok {
				return null()
			}
			content := raw[i+1 : end]
			if expectKey {
				redactNext = r.key(content, depth)
				expectKey = false
			}
			dst = append(dst, '"')
			if nonASCII {
				dst = appendRawStringContent(dst, content)
			} else {
				dst = append(dst, content...)
			}
			dst = append(dst, '"')
			i = end + 1
			continue
		case isSpace(c):
			i++
			continue
		case c == ':' && redactNext:
			redactNext = false
			end := skipValue(raw, skipSpace(raw, i+1))
			if end < 0 {
				return null()
			}
			dst = append(dst, ':')
			dst = append(dst, Redacted...)
			i = end
			continue
		case c == ',':
			expectKey = depth > 0 && inArray[(depth-1)/64]&(1<<((depth-1)%64)) == 0
		case c == '{' || c == '[':
			if depth == maxObjectDepth {
				return null()
			}
			bit := uint64(1) << (depth % 64)
			if c == '[' {
				inArray[depth/64] |= bit
			} else {
				inArray[depth/64] &^= bit
			}
			depth++
			expectKey = c == '{'
		case c == '}' || c == ']':
			if depth == 0 {
				return null()
			}
			depth--
			expectKey = false
			r.closed(depth)
			if array := inArray[depth/64]&(1<<(depth%64)) != 0; array != (c == ']') {
				return null()
			}
			if depth == 0 {
				if skipSpace(raw, i+1) != len(raw) {
					return null()
				}
				return append(dst, c)
			}
		case c < 0x20 || c >= 0x7f:
			return null()
		}
		dst = append(dst, raw[i])
		i++
	}
	return null()
}

// stringEnd returns the index of the quote that ends the JSON string whose content starts at
// s[i], or len(s). It jumps from quote to quote (strings.IndexByte is assembly, much faster
// in the wasm filter than a loop in Go) and counts the backslashes right before each: an odd
// number escapes the quote.
func stringEnd(s string, i int) int {
	start := i
	for {
		q := strings.IndexByte(s[i:], '"')
		if q < 0 {
			return len(s)
		}
		i += q
		backslashes := 0
		for j := i - 1; j >= start && s[j] == '\\'; j-- {
			backslashes++
		}
		if backslashes%2 == 0 {
			return i
		}
		i++
	}
}

// appendRawStringContent appends the content of a JSON string literal that holds a non-ASCII
// byte, keeping its escapes and replacing invalid UTF-8 with U+FFFD and the runes of
// isLineBreaking with escapes. (Content that is all ASCII is copied as it is: scanString
// tells which.)
func appendRawStringContent(dst []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); {
		if s[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case isLineBreaking(r):
			dst = append(dst, s[start:i]...)
			dst = appendRuneEscape(dst, r)
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(dst, s[start:]...)
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(s string, i int) int {
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	return i
}
