package siphash

import (
	"encoding/binary"
	"math/bits"
)

// Key is a SipHash key: 16 bytes, read as two little-endian 64-bit words.
type Key struct{ k0, k1 uint64 }

// NewKey returns the key of the 16 bytes b.
func NewKey(b [16]byte) Key {
	return Key{k0: binary.LittleEndian.Uint64(b[:8]), k1: binary.LittleEndian.Uint64(b[8:])}
}

// round is one SipRound on the four state words. It works on values, not on a state in
// memory, so that the compiler inlines it: as a method on a pointer it was a call per round
// (twenty-odd calls for a 44-byte message), and a call costs ~170 instructions in Go's wasm code.
func round(v0, v1, v2, v3 uint64) (uint64, uint64, uint64, uint64) {
	v0 += v1
	v1 = bits.RotateLeft64(v1, 13) ^ v0
	v0 = bits.RotateLeft64(v0, 32)
	v2 += v3
	v3 = bits.RotateLeft64(v3, 16) ^ v2
	v0 += v3
	v3 = bits.RotateLeft64(v3, 21) ^ v0
	v2 += v1
	v1 = bits.RotateLeft64(v1, 17) ^ v2
	v2 = bits.RotateLeft64(v2, 32)
	return v0, v1, v2, v3
}

// Sum128 returns SipHash-2-4-128 of p under k: the first eight bytes are the first output word,
// the last eight the second, each little-endian, as the reference implementation writes them.
func Sum128(k Key, p []byte) [16]byte {
	v0 := k.k0 ^ 0x736f6d6570736575
	v1 := k.k1 ^ 0x646f72616e646f6d ^ 0xee
	v2 := k.k0 ^ 0x6c7967656e657261
	v3 := k.k1 ^ 0x7465646279746573
	n := len(p)
	// Each message word, then the last (the remaining bytes and the length), is absorbed
	// with two rounds (the "2" of SipHash-2-4); the loops keep one copy of the round each.
	last := uint64(n&0xff) << 56
	for done := false; !done; {
		var m uint64
		if len(p) >= 8 {
			m, p = binary.LittleEndian.Uint64(p), p[8:]
		} else {
			for i := len(p) - 1; i >= 0; i-- {
				last |= uint64(p[i]) << (8 * i)
			}
			m, done = last, true
		}
		v3 ^= m
		for range 2 {
			v0, v1, v2, v3 = round(v0, v1, v2, v3)
		}
		v0 ^= m
	}
	var out [16]byte
	v2 ^= 0xee
	for range 4 {
		v0, v1, v2, v3 = round(v0, v1, v2, v3)
	}
	binary.LittleEndian.PutUint64(out[:8], v0^v1^v2^v3)
	v1 ^= 0xdd
	for range 4 {
		v0, v1, v2, v3 = round(v0, v1, v2, v3)
	}
	binary.LittleEndian.PutUint64(out[8:], v0^v1^v2^v3)
	return out
}
