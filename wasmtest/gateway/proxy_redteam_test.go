package gateway

import (
	"io"
	"runtime"
	"strings"
	"testing"
)

// trickle is a request body of which only a few bytes ever arrive, whatever length its
// Content-Length announced.
type trickle struct{ r io.Reader }

func (t trickle) Read(p []byte) (int, error) { return t.r.Read(p) }

// A body's announced length is the client's word: what bufferBody holds for a body grows with
// the bytes that arrived, not with the length announced (a request routed without the filter
// buffering it, a PUT or a plain route's upload, reaches bufferBody as soon as its headers do).
// Otherwise a client holding open connections that announce MaxRequestBody, each after a
// few bytes, makes the gateway hold 16 MiB per connection until the body deadline.
func TestReadBody_MemoryFollowsBytesReceivedNotAnnounced(t *testing.T) {
	for _, announced := range []int64{MaxRequestBody, MaxRequestBody / 2, 4 << 20} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		b, err := readBody(trickle{strings.NewReader("{\"id\":1}")}, announced)
		runtime.ReadMemStats(&after)
		if err != nil || string(b) != `{"id":1}` {
			t.Fatalf("announced %d: %q, %v", announced, b, err)
		}
		if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 { // room for what other goroutines allocate meanwhile
			t.Errorf("announced %d, 8 bytes sent: %d bytes allocated", announced, got)
		}
	}
}

// Bodies longer, shorter and as long as announced read whole, up to MaxRequestBody+1 bytes.
func TestReadBody_ReadsWhatArrives(t *testing.T) {
	for _, c := range []struct {
		size      int
		announced int64
	}{
		{0, 10}, {10, 10}, {9, 10}, {11, 10}, {100 << 10, 100 << 10}, {100 << 10, 10},
		{10, 100 << 10}, {MaxRequestBody + 5, MaxRequestBody}, {MaxRequestBody + 5, 5},
	} {
		body := strings.Repeat("x", c.size)
		b, err := readBody(trickle{strings.NewReader(body)}, c.announced)
		want := min(c.size, MaxRequestBody+1)
		if err != nil || len(b) != want || string(b) != body[:want] {
			t.Errorf("size %d announced %d: %d bytes, %v; want %d", c.size, c.announced, len(b), err, want)
		}
	}
}
