package authlog

import (
	"encoding/binary"
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

func appendReasons(dst []byte, rs policy.Reasons) []byte {
	dst = append(dst, '[')
	first := true
	for r := range rs.All() {
		if !first {
			dst = append(dst, ',')
		}
		first = false
		if int(r) < len(reasonJSON) {
			dst = append(dst, reasonJSON[r]...)
		} else {
			dst = appendString(dst, r.String())
		}
	}
	return append(dst, ']')
}

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
	if isPlain(s) {
		return append(dst, s...) // the common case: nothing to escape or replace
	}
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
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
			end := stringEnd(raw, i+1)
			content := raw[i+1 : end]
			if end == len(raw) || hasControl(content) {
				return null()
			}
			if expectKey {
				redactNext = r.key(content, depth)
				expectKey = false
			}
			dst = append(dst, '"')
			dst = appendRawStringContent(dst, content)
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

// appendRawStringContent appends the content of a JSON string literal, keeping its escapes
// and replacing invalid UTF-8 with U+FFFD and the runes of isLineBreaking with escapes.
func appendRawStringContent(dst []byte, s string) []byte {
	if !hasNonASCII(s) {
		return append(dst, s...) // the common case, copied at once
	}
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

// Word-at-a-time scanning. In the wasm filter a byte-by-byte loop costs several nanoseconds
// a byte, and these run over whole tool arguments; looking at eight bytes per step is several
// times faster. For a byte x, (x - 1) &^ x has its top bit set only when x is zero, and
// (x - n) &^ x only when x is below n (n <= 0x80).
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// load64 returns the eight bytes s[i:i+8] as a little-endian word. (The conversion does not
// allocate: its eight bytes stay on the stack.)
func load64(s string, i int) uint64 { return binary.LittleEndian.Uint64([]byte(s[i : i+8])) }

// isPlain reports whether s is printable ASCII without quotes or backslashes: a JSON string
// content that needs no escaping.
func isPlain(s string) bool {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		w := load64(s, i)
		quote := w ^ (ones * '"')
		backslash := w ^ (ones * '\\')
		if ((quote-ones)&^quote|(backslash-ones)&^backslash|below(w, 0x20)|w)&highs != 0 {
			return false
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// hasControl reports whether s holds a control character (below 0x20).
func hasControl(s string) bool {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		if below(load64(s, i), 0x20)&highs != 0 {
			return true
		}
	}
	for ; i < len(s); i++ {
		if s[i] < 0x20 {
			return true
		}
	}
	return false
}

// hasNonASCII reports whether s holds a byte of 0x80 or above.
func hasNonASCII(s string) bool {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		if load64(s, i)&highs != 0 {
			return true
		}
	}
	for ; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return true
		}
	}
	return false
}

// below sets the top bit of the bytes of w that are below n (n <= 0x80), and possibly of
// bytes after the first such one.
func below(w uint64, n byte) uint64 { return (w - ones*uint64(n)) &^ w }
