package authlog

import (
	"math/bits"

	"github.com/mcpmesh/gateway/shared/wordscan"
)

// Word-at-a-time scanning of the record's strings. In the wasm filter a loop costs several
// instructions a byte and every call more (memchr, a conversion of eight bytes into a slice),
// and these scans run over whole tool arguments: one pass that stops only at the bytes that
// need a look, eight bytes a test and 32 a turn, costs a fraction of separate byte loops
// (BenchmarkWriter_FilterRecord under wazero: 60.8k instructions before this scanner).

const (
	ones  = wordscan.Ones
	highs = wordscan.Highs
)

// le64 returns the eight bytes s[i:i+8] as a little-endian word.
func le64(s string, i int) uint64 { return wordscan.Load(s, i) }

// specialBits looks at the eight bytes packed little-endian in w. After a mask with highs,
// its lowest set bit is the top bit of the first byte that is a quote, a backslash, a
// control character (below 0x20) or not ASCII (0x80 and above), and it is zero when there is
// none. For a byte x, x - 1 has its top bit set when x is zero or above 0x80, and x - 0x20
// when x is below 0x20 or at least 0xa0: the bytes above 0x80 that these mark are specials
// anyway (as w marks them). A borrow only starts at a byte that is marked and may mark later
// bytes, never earlier ones, so the lowest bit is exact.
func specialBits(w uint64) uint64 {
	quote := w ^ (ones * '"')
	backslash := w ^ (ones * '\\')
	return (quote - ones) | (backslash - ones) | (w - ones*0x20) | w
}

// isSpecial reports whether c is a byte specialBits marks.
func isSpecial(c byte) bool { return c < 0x20 || c >= 0x80 || c == '"' || c == '\\' }

// specialIndex returns the index of the first byte at or after s[i] that is a quote, a
// backslash, a control character or not ASCII, or len(s) if there is none.
func specialIndex(s string, i int) int {
	for i+32 <= len(s) {
		t := s[i : i+32] // one bounds check for the four words
		if (specialBits(le64(t, 0))|specialBits(le64(t, 8))|specialBits(le64(t, 16))|specialBits(le64(t, 24)))&highs != 0 {
			break
		}
		i += 32
	}
	for ; i+8 <= len(s); i += 8 {
		if m := specialBits(le64(s, i)) & highs; m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	if i == len(s) {
		return i
	}
	if len(s) >= 8 {
		// The last bytes, from the word that ends with them: shifted down to its first byte,
		// with ordinary bytes ('a') shifted in above them (the bytes before i may be special,
		// and a borrow from them would mark the bytes after).
		k := uint(i - (len(s) - 8)) // 1 to 7
		w := le64(s, len(s)-8)>>(8*k) | (ones*'a')<<(64-8*k)
		if m := specialBits(w) & highs; m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
		return len(s)
	}
	// Fewer than eight bytes in all (a user name, a tool name): packed into one word above
	// ordinary bytes ('a') and tested at once. A byte loop testing each byte for four
	// kinds of special cost about a hundred instructions a byte in the wasm filter.
	w := uint64(ones * 'a')
	for j := len(s) - 1; j >= i; j-- {
		w = w<<8 | uint64(s[j])
	}
	if m := specialBits(w) & highs; m != 0 {
		return i + bits.TrailingZeros64(m)/8
	}
	return len(s)
}

// scanString finds the end of the JSON string whose content starts at s[i] as stringEnd
// does (the first quote not escaped by a backslash), in the same pass checks its content for
// control characters and non-ASCII bytes, and returns the index of the closing quote,
// whether the content holds a non-ASCII byte, and ok: false when the string does not end or
// holds a control character.
func scanString(s string, i int) (end int, nonASCII, ok bool) {
	for {
		i = specialIndex(s, i)
		if i == len(s) {
			return i, nonASCII, false
		}
		switch c := s[i]; {
		case c == '"':
			return i, nonASCII, true
		case c == '\\':
			// A backslash escapes the next byte; only a quote or a backslash matters here, as
			// the scan then goes on from the byte after it. Any other byte is looked at as
			// it would be without the backslash (a control character still counts).
			if i+1 < len(s) && (s[i+1] == '"' || s[i+1] == '\\') {
				i++
			}
			i++
		case c < 0x20:
			return i, nonASCII, false
		default:
			nonASCII = true
			i++
		}
	}
}
