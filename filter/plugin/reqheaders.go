package plugin

import (
	"github.com/mcpmesh/gateway/shared/ascii"
	"github.com/mcpmesh/gateway/shared/checkapi"
)

// Request headers the filter reads by name, indexed when the headers arrive (hdrIndex).
const (
	hAuthority = iota
	hPath
	hMethod
	hRequestID
	hOrigin
	hAuthorization
	hContentEncoding
	hContentLength
	hCookie
	hAccept
	hACRequestMethod
	numIndexedHeaders
)

// hdrIndex is what one pass over the request headers found, so that the request path does
// not scan them again for each name it reads (a dozen scans a request before, each inlined
// loop a few hundred bytes of compiled code in the wasm filter). Names are matched exactly,
// as header() matches them; the names some checks also accept in other spellings (any case,
// '_' for '-') only set flags that let those checks skip their own loop when the request
// carries nothing of the kind.
type hdrIndex struct {
	// at holds 1 + the position in hdrs of the first header of each indexed name; 0 when the
	// request has none.
	at [numIndexedHeaders]int32
	// nContentType counts the content-type headers; lastContentType is 1 + the position of
	// the last one (contentTypeOf's reading).
	nContentType, lastContentType int32
	// assertionLen: a header has the length of the assertion header (the loop that removes
	// its spellings runs only then).
	assertionLen bool
	// acceptEncoding: a header is named accept-encoding in some case.
	acceptEncoding bool
	// sessionLen: a header has the length of mcp-session-id (admitToServer's loop runs).
	sessionLen bool
	// mcpMeta: a header may be one of the request metadata headers (mcpHeaders' loop runs).
	mcpMeta bool
}

// indexHeaders fills s.idx from s.hdrs, in one loop: a call per header would cost more than
// most of its tests. Names are told apart by their length, then compared as two words that
// overlap (le64, le32) where the compiler would call runtime.memequal (names of 7 bytes and
// more); all but the first word's compare are constants.
func (s *stream) indexHeaders() {
	// From scratch: a host that hands over the headers again (a second proxy_on_request_headers)
	// must not have positions in the former list read in the new one.
	s.idx = hdrIndex{}
	x := &s.idx
	for i := range s.hdrs {
		n, pos := s.hdrs[i].Name, int32(i)+1
		switch len(n) {
		case len(":path"):
			if n == ":path" {
				x.first(hPath, pos)
			}
		case len("origin"): // origin, cookie, accept
			switch n {
			case "origin":
				x.first(hOrigin, pos)
			case "cookie":
				x.first(hCookie, pos)
			case "accept":
				x.first(hAccept, pos)
			}
		case len(":method"): // also :scheme
			if le32(n) == le32(":method") && le32(n[3:]) == le32(":method"[3:]) {
				x.first(hMethod, pos)
			}
		case len("mcp-name"):
			x.mcpMeta = x.mcpMeta || isMCPPrefix(n)
		case len(":authority"): // also mcp-method
			if n[0] == ':' {
				if le64(n) == le64(":authority") && le64(n[2:]) == le64(":authority"[2:]) {
					x.first(hAuthority, pos)
				}
			} else {
				x.mcpMeta = x.mcpMeta || isMCPPrefix(n)
			}
		case len("content-type"): // also x-request-id
			switch {
			case le64(n) == le64("content-type") && le64(n[4:]) == le64("content-type"[4:]):
				x.nContentType++
				x.lastContentType = pos
			case le64(n) == le64("x-request-id") && le64(n[4:]) == le64("x-request-id"[4:]):
				x.first(hRequestID, pos)
			}
		case len("authorization"):
			if le64(n) == le64("authorization") && le64(n[5:]) == le64("authorization"[5:]) {
				x.first(hAuthorization, pos)
			}
		case len("content-length"): // also mcp-session-id
			switch n[0] {
			case 'c':
				if le64(n) == le64("content-length") && le64(n[6:]) == le64("content-length"[6:]) {
					x.first(hContentLength, pos)
				}
			case 'm': // mcp-session-id or a spelling of it with '_'
				x.sessionLen = true
			}
		case len("accept-encoding"):
			x.acceptEncoding = x.acceptEncoding || ascii.EqualFold(n, "accept-encoding")
		case len("content-encoding"):
			if le64(n) == le64("content-encoding") && le64(n[8:]) == le64("content-encoding"[8:]) {
				x.first(hContentEncoding, pos)
			}
		case len(checkapi.AssertionHeader):
			x.assertionLen = true
		case len(headerProtocolVersion):
			x.mcpMeta = x.mcpMeta || isMCPPrefix(n)
		case len("access-control-request-method"):
			if n == "access-control-request-method" {
				x.first(hACRequestMethod, pos)
			}
		}
	}
}

// first records pos as the position of header k unless an earlier one was recorded.
func (x *hdrIndex) first(k int, pos int32) {
	if x.at[k] == 0 {
		x.at[k] = pos
	}
}

// le64 is the first 8 bytes of s as a little-endian word: one load in the wasm build, and a
// constant for a constant string.
func le64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// le32 is the first 4 bytes of s as a little-endian word.
func le32(s string) uint32 {
	_ = s[3]
	return uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16 | uint32(s[3])<<24
}

// isMCPPrefix is mcpHeaders' first test of a name whose length is one of the metadata
// headers'.
func isMCPPrefix(n string) bool { return n[0] == 'm' && n[1] == 'c' && n[2] == 'p' }

// indexed returns the first value of the indexed request header k.
func (s *stream) indexed(k int) (string, bool) {
	if p := s.idx.at[k]; p > 0 {
		return s.hdrs[p-1].Value, true
	}
	return "", false
}
