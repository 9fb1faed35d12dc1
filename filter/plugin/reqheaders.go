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

// indexHeaders fills s.idx from s.hdrs. Names are told apart by their length and one or two
// bytes before a full comparison (a call in the wasm filter), in one loop: a call per header
// would cost more than most of its tests.
func (s *stream) indexHeaders() {
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
			if n[1] == 'm' && n == ":method" {
				x.first(hMethod, pos)
			}
		case len("mcp-name"):
			x.mcpMeta = x.mcpMeta || isMCPPrefix(n)
		case len(":authority"): // also mcp-method
			if n[0] == ':' {
				if n == ":authority" {
					x.first(hAuthority, pos)
				}
			} else {
				x.mcpMeta = x.mcpMeta || isMCPPrefix(n)
			}
		case len("content-type"): // also x-request-id
			switch {
			case n[0] == 'c' && n[len(n)-1] == 'e' && n == "content-type":
				x.nContentType++
				x.lastContentType = pos
			case n[0] == 'x' && n[len(n)-1] == 'd' && n == "x-request-id":
				x.first(hRequestID, pos)
			}
		case len("authorization"):
			if n[0] == 'a' && n == "authorization" {
				x.first(hAuthorization, pos)
			}
		case len("content-length"): // also mcp-session-id
			switch n[0] {
			case 'c':
				if n == "content-length" {
					x.first(hContentLength, pos)
				}
			case 'm': // mcp-session-id or a spelling of it with '_'
				x.sessionLen = true
			}
		case len("accept-encoding"):
			x.acceptEncoding = x.acceptEncoding || ascii.EqualFold(n, "accept-encoding")
		case len("content-encoding"):
			if n[0] == 'c' && n == "content-encoding" {
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
