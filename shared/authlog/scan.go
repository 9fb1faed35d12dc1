package authlog

import (
	"encoding/binary"
	"math/bits"
	"unsafe"
)

// Word-at-a-time scanning of the record's strings. In the wasm filter a loop costs several
// instructions a byte and every call more (memchr, a conversion of eight bytes into a slice),
// and these scans run over whole tool arguments: one pass that stops only at the bytes that
// need a look, eight bytes a test and 32 a turn, costs a fraction of separate byte loops
// (BenchmarkWriter_FilterRecord under wazero: 60.8k instructions before this scanner).

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// bytesOf returns the bytes of s without a copy; the scanners only read them.
func bytesOf(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// specials looks at the eight bytes packed little-endian in w. Its lowest set bit is the
// top bit of the first byte that is a quote, a backslash, a control character (below 0x20)
// or not ASCII (0x80 and above); it is zero when there is none. For a byte x, (x - 1) &^ x
// has its top bit set when x is zero and (x - 0x20) &^ x when x is below 0x20; a borrow may
// set the bits of later bytes too, but never of earlier ones, so the lowest bit is exact.
func specials(w uint64) uint64 {
	quote := w ^ (ones * '"')
	backslash := w ^ (ones * '\\')
	return ((quote-ones)&^quote | (backslash-ones)&^backslash | (w-ones*0x20)&^w | w) & highs
}

// isSpecial reports whether c is a byte specials marks.
func isSpecial(c byte) bool { return c < 0x20 || c >= 0x80 || c == '"' || c == '\\' }

// specialIndex returns the index of the first byte at or after b[i] that is a quote, a
// backslash, a control character or not ASCII, or len(b) if there is none.
func specialIndex(b []byte, i int) int {
	for i+32 <= len(b) {
		w := b[i : i+32]
		if specials(binary.LittleEndian.Uint64(w))|specials(binary.LittleEndian.Uint64(w[8:]))|
			specials(binary.LittleEndian.Uint64(w[16:]))|specials(binary.LittleEndian.Uint64(w[24:])) != 0 {
			break
		}
		i += 32
	}
	for ; i+8 <= len(b); i += 8 {
		if m := specials(binary.LittleEndian.Uint64(b[i:])); m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	if i == len(b) {
		return i
	}
	if len(b) >= 8 {
		// The last bytes, from the word that ends with them: shifted down to its first byte,
		// with ordinary bytes ('a') shifted in above them (the bytes before i may be special,
		// and a borrow from them would mark the bytes after).
		k := uint(i - (len(b) - 8)) // 1 to 7
		w := binary.LittleEndian.Uint64(b[len(b)-8:])>>(8*k) | (ones*'a')<<(64-8*k)
		if m := specials(w); m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
		return len(b)
	}
	for ; i < len(b); i++ {
		if isSpecial(b[i]) {
			return i
		}
	}
	return i
}

// scanString finds the end of the JSON string whose content starts at b[i] as stringEnd
// does (the first quote not escaped by a backslash), in the same pass checks its content for
// control characters and non-ASCII bytes, and returns the index of the closing quote,
// whether the content holds a non-ASCII byte, and ok: false when the string does not end or
// holds a control character.
func scanString(b []byte, i int) (end int, nonASCII, ok bool) {
	for {
		i = specialIndex(b, i)
		if i == len(b) {
			return i, nonASCII, false
		}
		switch c := b[i]; {
		case c == '"':
			return i, nonASCII, true
		case c == '\\':
			// A backslash escapes the next byte; only a quote or a backslash matters here, as
			// the scan then goes on from the byte after it. Any other byte is looked at as
			// it would be without the backslash (a control character still counts).
			if i+1 < len(b) && (b[i+1] == '"' || b[i+1] == '\\') {
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
