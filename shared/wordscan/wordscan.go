// Package wordscan holds the word-at-a-time primitives that the string scanners of the
// record writer (shared/authlog) and the local gateway's text log (wasmtest/gateway) build
// on: eight bytes of a string as one little-endian word, and the classic tests of all eight
// bytes at once. In the wasm filter a byte loop costs several instructions a byte and a call
// more, so scanners test a word and look at single bytes only where a test says so.
//
// The tests are exact as to whether any byte qualifies: a borrow can mark a byte wrongly
// only above a byte that does qualify, never below it, so the lowest marked byte is also
// exact.
package wordscan

// Ones has 0x01 in every byte, Highs 0x80 (the top bit of every byte).
const (
	Ones  = 0x0101010101010101
	Highs = 0x8080808080808080
)

// Load returns s[i:i+8] as a little-endian word. The compiler merges the byte loads into one
// 8-byte load; s[i:i+8] is bounds-checked once.
func Load(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// Zero marks with its top bit each byte of w that is 0 (and possibly bytes above one).
func Zero(w uint64) uint64 { return (w - Ones) &^ w & Highs }

// Below marks with its top bit each byte of w that is below n (and possibly bytes above
// one); n is at most 0x80 and the top bits of w must be clear.
func Below(w uint64, n uint64) uint64 { return (w - Ones*n) &^ w & Highs }

// Byte marks with its top bit each byte of w equal to c (and possibly bytes above one).
func Byte(w uint64, c byte) uint64 { return Zero(w ^ (Ones * uint64(c))) }
