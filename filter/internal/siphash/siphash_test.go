package siphash

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"testing"

	reference "github.com/dchest/siphash"
)

// refKey is the key of the reference implementation's test vectors: bytes 00 01 … 0f.
func refKey() [16]byte {
	var k [16]byte
	for i := range k {
		k[i] = byte(i)
	}
	return k
}

// TestSum128_ReferenceVectors checks vectors of the reference implementation's
// vectors_sip128 (key 00…0f, message 00 01 … of each length): no message, tails of every
// length class, one and several whole blocks, a block and a tail.
func TestSum128_ReferenceVectors(t *testing.T) {
	for _, tt := range []struct {
		n    int
		want string
	}{
		{0, "a3817f04ba25a8e66df67214c7550293"},
		{1, "da87c1d86b99af44347659119b22fc45"},
		{2, "8177228da4a45dc7fca38bdef60affe4"},
		{7, "a1f1ebbed8dbc153c0b84aa61ff08239"},
		{8, "3b62a9ba6258f5610f83e264f31497b4"},
		{9, "264499060ad9baabc47f8b02bb6d71ed"},
		{15, "5493e99933b0a8117e08ec0f97cfc3d9"},
		{16, "6ee2a4ca67b054bbfd3315bf85230577"},
		{31, "2939b0183223fafc1723de4f52c43d35"},
		{32, "7c3956ca5eeafc3e363e9d556546eb68"},
		{63, "5150d1772f50834a503e069a973fbd7c"},
	} {
		msg := make([]byte, tt.n)
		for i := range msg {
			msg[i] = byte(i)
		}
		got := Sum128(NewKey(refKey()), msg)
		if hex.EncodeToString(got[:]) != tt.want {
			t.Errorf("length %d: %x, want %s", tt.n, got, tt.want)
		}
	}
}

// sumReference is Sum128 computed by an independent implementation (a test-only dependency).
func sumReference(key [16]byte, p []byte) [16]byte {
	lo, hi := reference.Hash128(binary.LittleEndian.Uint64(key[:8]), binary.LittleEndian.Uint64(key[8:]), p)
	var out [16]byte
	binary.LittleEndian.PutUint64(out[:8], lo)
	binary.LittleEndian.PutUint64(out[8:], hi)
	return out
}

func TestSum128_MatchesIndependentImplementation(t *testing.T) {
	msg := make([]byte, 200)
	rand.Read(msg)
	for n := range len(msg) + 1 {
		var key [16]byte
		rand.Read(key[:])
		if got, want := Sum128(NewKey(key), msg[:n]), sumReference(key, msg[:n]); got != want {
			t.Fatalf("length %d: %x, want %x", n, got, want)
		}
	}
}

func TestSum128_KeyAndMessageMatter(t *testing.T) {
	k := NewKey(refKey())
	other := refKey()
	other[15] ^= 1
	msg := []byte("token")
	base := Sum128(k, msg)
	if Sum128(NewKey(other), msg) == base {
		t.Error("a different key gave the same output")
	}
	if Sum128(k, []byte("tokem")) == base || Sum128(k, []byte("token\x00")) == base {
		t.Error("a different message gave the same output")
	}
}

func FuzzSum128_MatchesIndependentImplementation(f *testing.F) {
	f.Add([]byte{}, []byte("0123456789abcdef"))
	f.Add([]byte("bmcp_0123456789abcdefghijklmnopqrstuvwxyzABCDEFG"), []byte("fedcba9876543210"))
	f.Fuzz(func(t *testing.T, msg, key []byte) {
		var k [16]byte
		copy(k[:], key)
		if got, want := Sum128(NewKey(k), msg), sumReference(k, msg); !bytes.Equal(got[:], want[:]) {
			t.Fatalf("Sum128(%x, %q) = %x, want %x", k, msg, got, want)
		}
	})
}

func BenchmarkSum128_44Bytes(b *testing.B) {
	k := NewKey(refKey())
	msg := make([]byte, 44)
	for b.Loop() {
		_ = Sum128(k, msg)
	}
}
