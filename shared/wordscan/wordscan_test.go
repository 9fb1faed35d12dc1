package wordscan

import (
	"math/bits"
	"testing"
)

// For every byte value at every place of a word of ordinary bytes, each test marks exactly
// that place as the lowest, or nothing.
func TestTests_LowestMarkIsExact(t *testing.T) {
	t.Parallel()
	lowest := func(m uint64) int {
		if m == 0 {
			return -1
		}
		return bits.TrailingZeros64(m) / 8
	}
	for c := 0; c < 256; c++ {
		for at := 0; at < 8; at++ {
			b := []byte("abcdefgh")
			b[at] = byte(c)
			w := Load(string(b), 0)
			want := func(ok bool) int {
				if ok {
					return at
				}
				return -1
			}
			if got := lowest(Zero(w)); got != want(c == 0) {
				t.Fatalf("Zero, byte %#x at %d: %d", c, at, got)
			}
			if got := lowest(Byte(w, '"')); got != want(c == '"') {
				t.Fatalf("Byte, byte %#x at %d: %d", c, at, got)
			}
			if c < 0x80 {
				if got := lowest(Below(w, 0x21)); got != want(c < 0x21) {
					t.Fatalf("Below, byte %#x at %d: %d", c, at, got)
				}
			}
		}
	}
	if Load("0123456789", 2) != 0x3938373635343332 {
		t.Fatalf("Load: %#x", Load("0123456789", 2))
	}
}
