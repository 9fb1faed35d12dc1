package plugin

import (
	"bytes"
	"testing"
	"unsafe"
)

// TestSessionBinding_KeepsNoCallerBytes: the last pair a binding remembers lives in a cached
// bundle for the bundle's lifetime, so it must not point into the buffers its arguments came
// from (the host's header buffers of one request), whose whole size it would keep alive
// outside the cache's byte bound. The test changes those buffers after each call, as a later
// request's bytes would, and checks that the binding still answers from its own copy.
func TestSessionBinding_KeepsNoCallerBytes(t *testing.T) {
	sb := newSessionBinding(bytes.Repeat([]byte{7}, 32))
	within := func(s string, buf []byte) bool {
		p, b := uintptr(unsafe.Pointer(unsafe.StringData(s))), uintptr(unsafe.Pointer(&buf[0]))
		return p >= b && p < b+uintptr(len(buf))
	}

	// wrap: the upstream's ID, read from its response headers.
	resp := []byte("mcp-session-id\x00up-session-1\x00")
	id := unsafe.String(&resp[15], len("up-session-1"))
	w, ok := sb.wrap(id)
	if !ok {
		t.Fatal("wrap: no session key")
	}
	if within(sb.lastID, resp) || within(sb.lastWrapped, resp) {
		t.Fatal("wrap kept the response header buffer")
	}
	copy(resp[15:], "XXXXXXXXXXXX")
	if sb.lastID != "up-session-1" {
		t.Fatalf("lastID changed with the caller's buffer: %q", sb.lastID)
	}

	// unwrap: the client's ID, read from its request headers, on a binding that has not just
	// seen it.
	sb2 := newSessionBinding(bytes.Repeat([]byte{7}, 32))
	req := []byte("mcp-session-id\x00" + w + "\x00")
	v := unsafe.String(&req[15], len(w))
	got, ok := sb2.unwrap(v)
	if !ok || got != "up-session-1" {
		t.Fatalf("unwrap = %q, %v", got, ok)
	}
	if within(sb2.lastID, req) || within(sb2.lastWrapped, req) || within(got, req) {
		t.Fatal("unwrap kept the request header buffer")
	}
	copy(req[15:], bytes.Repeat([]byte{'Y'}, len(w)))
	if sb2.lastWrapped != w || sb2.lastID != "up-session-1" {
		t.Fatalf("the remembered pair changed with the caller's buffer: %q, %q", sb2.lastWrapped, sb2.lastID)
	}
	// The remembered pair still answers.
	if got, ok := sb2.unwrap(w); !ok || got != "up-session-1" {
		t.Fatalf("unwrap of the remembered pair = %q, %v", got, ok)
	}
}
