package storetest

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/tokensvc/store"
)

// BenchGetAccessToken measures GetAccessToken of a live token of a live grant
// (the check API's store lookup on a filter cache miss).
func BenchGetAccessToken(b *testing.B, s store.Store) {
	sess := newSession(b, s)
	g, _ := newGrant(b, s, sess.ID)
	at := newAccessToken(b, s, g)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.GetAccessToken(b.Context(), at.Hash, t0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchRotateRefreshToken measures RotateRefreshToken along one family, each
// iteration spending the token the previous one issued.
func BenchRotateRefreshToken(b *testing.B, s store.Store) {
	sess := newSession(b, s)
	_, rt := newGrant(b, s, sess.ID)
	// Two alternating buffers: a counter in the first 8 bytes, randomness
	// after it, so every new token is distinct without allocating.
	var bufs [2][32]byte
	copy(bufs[0][8:], Hash(b))
	copy(bufs[1][8:], bufs[0][8:])
	old := rt.Hash
	b.ReportAllocs()
	b.ResetTimer()
	var i uint64
	for b.Loop() {
		buf := &bufs[i%2]
		binary.BigEndian.PutUint64(buf[:8], i)
		next := store.RefreshToken{Hash: buf[:], CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
		if _, err := s.RotateRefreshToken(b.Context(), old, next, t0); err != nil {
			b.Fatal(err)
		}
		old = next.Hash
		i++
	}
}
