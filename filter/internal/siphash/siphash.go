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

// state is the four words of SipHash's internal state.
type state struct{ v0, v1, v2, v3 uint64 }

func (s *state) round() {
	s.v0 += s.v1
	s.v1 = bits.RotateLeft64(s.v1, 13)
	s.v1 ^= s.v0
	s.v0 = bits.RotateLeft64(s.v0, 32)
	s.v2 += s.v3
	s.v3 = bits.RotateLeft64(s.v3, 16)
	s.v3 ^= s.v2
	s.v0 += s.v3
	s.v3 = bits.RotateLeft64(s.v3, 21)
	s.v3 ^= s.v0
	s.v2 += s.v1
	s.v1 = bits.RotateLeft64(s.v1, 17)
	s.v1 ^= s.v2
	s.v2 = bits.RotateLeft64(s.v2, 32)
}

// compress absorbs one message word with two rounds (the "2" of SipHash-2-4).
func (s *state) compress(m uint64) {
	s.v3 ^= m
	s.round()
	s.round()
	s.v0 ^= m
}

// Sum128 returns SipHash-2-4-128 of p under k: the first eight bytes are the first output word,
// the last eight the second, each little-endian, as the reference implementation writes them.
func Sum128(k Key, p []byte) [16]byte {
	s := state{
		v0: k.k0 ^ 0x736f6d6570736575,
		v1: k.k1 ^ 0x646f72616e646f6d ^ 0xee,
		v2: k.k0 ^ 0x6c7967656e657261,
		v3: k.k1 ^ 0x7465646279746573,
	}
	n := len(p)
	for ; len(p) >= 8; p = p[8:] {
		s.compress(binary.LittleEndian.Uint64(p))
	}
	last := uint64(n&0xff) << 56
	for i := len(p) - 1; i >= 0; i-- {
		last |= uint64(p[i]) << (8 * i)
	}
	s.compress(last)

	s.v2 ^= 0xee
	s.round()
	s.round()
	s.round()
	s.round()
	var out [16]byte
	binary.LittleEndian.PutUint64(out[:8], s.v0^s.v1^s.v2^s.v3)
	s.v1 ^= 0xdd
	s.round()
	s.round()
	s.round()
	s.round()
	binary.LittleEndian.PutUint64(out[8:], s.v0^s.v1^s.v2^s.v3)
	return out
}
