package authlog

import (
	"encoding/binary"
	"strings"
	"unicode/utf8"
)

// The string scanning of the authorization record as it was before the single-pass scanner
// (specialIndex), kept as the reference its differential fuzz tests compare with
// (scan_test.go).

func refAppendStringContent(dst []byte, s string) []byte {
	if refIsPlain(s) {
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

func refAppendValidatedObject(dst []byte, raw string, r *redactor) []byte {
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
			end := refStringEnd(raw, i+1)
			content := raw[i+1 : end]
			if end == len(raw) || refHasControl(content) {
				return null()
			}
			if expectKey {
				redactNext = r.key(content, depth)
				expectKey = false
			}
			dst = append(dst, '"')
			dst = refAppendRawStringContent(dst, content)
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

func refStringEnd(s string, i int) int {
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

func refAppendRawStringContent(dst []byte, s string) []byte {
	if !refHasNonASCII(s) {
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

func refIsPlain(s string) bool {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		w := refLoad64(s, i)
		quote := w ^ (ones * '"')
		backslash := w ^ (ones * '\\')
		if ((quote-ones)&^quote|(backslash-ones)&^backslash|refBelow(w, 0x20)|w)&highs != 0 {
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

func refHasControl(s string) bool {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		if refBelow(refLoad64(s, i), 0x20)&highs != 0 {
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

func refHasNonASCII(s string) bool {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		if refLoad64(s, i)&highs != 0 {
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

func refLoad64(s string, i int) uint64 { return binary.LittleEndian.Uint64([]byte(s[i : i+8])) }

func refBelow(w uint64, n byte) uint64 { return (w - ones*uint64(n)) &^ w }
