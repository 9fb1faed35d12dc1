package plugin

import "testing"

// BenchmarkSessionBinding_NewID wraps two upstream session IDs in turn, so that every wrap
// computes a tag (the remembered last pair never matches): the cost of a session ID a
// bundle has not just seen.
func BenchmarkSessionBinding_NewID(b *testing.B) {
	key := make([]byte, 32)
	for i := range key {
		key[i] = byte(i)
	}
	sb := newSessionBinding(key)
	ids := [2]string{"up-session-1", "up-session-2"}
	for i := range b.N {
		if _, ok := sb.wrap(ids[i%2]); !ok {
			b.Fatal("no session key")
		}
	}
}
