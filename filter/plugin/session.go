package plugin

import (
	"encoding/base64"
	"strings"

	"github.com/mcpmesh/gateway/filter/jsonrpc"
	"github.com/mcpmesh/gateway/shared/policy"
	"github.com/mcpmesh/gateway/shared/sha2"
)

// MCP session binding (docs/decisions.md, "MCP sessions are bound to their user").
//
// A streamable-HTTP MCP server hands out a session ID in the Mcp-Session-Id response header
// and trusts whoever sends it back: behind the gateway every request reaches it
// authenticated, so it cannot tell one user's session from another's. The filter therefore
// never shows a client the upstream's ID. It hands out
//
//	<tag>.<upstream session ID>      tag = base64url(HMAC-SHA256(session key, upstream ID)[:16])
//
// where the session key comes with the decision bundle and is the token service's
// HMAC of the user's subject and the route ID (the same on every VM and replica, so nothing
// is stored). A request whose Mcp-Session-Id does not carry the tag of its own user and route
// is answered 404, as an unknown session (the MCP client then starts a new one); otherwise
// the upstream receives its own ID back.

// sessionHeader is the MCP session header (lower case, as the proxy hands headers over).
const sessionHeader = "mcp-session-id"

// sessionTagLen is the length of a tag: 16 bytes of MAC in unpadded base64url.
const sessionTagLen = 22

// sessionBinding is the per-bundle state of the session MAC.
//
// It keeps the session key, not a keyed HMAC: an HMAC-SHA256 state (two SHA-256 digests and
// their pads) was about 540 bytes with crypto/hmac, over half of a cached bundle, and is a few
// hundred with shared/sha2's MAC; most bundles compute a
// tag once per session ID (the last pair is remembered), so a tag makes its HMAC afresh —
// four SHA-256 blocks, as the first tag of a kept HMAC cost with its construction
// (BENCHMARKS.md, "Memory per VM").
type sessionBinding struct {
	key []byte // the session key; nil without one. Never written after newSessionBinding.
	// The last pair wrapped or verified: a session sends one ID on every request, so most
	// checks are a string comparison instead of a MAC.
	lastWrapped, lastID string
}

// newSessionBinding binds sessions with key, which the binding keeps: the caller must not
// change it afterwards.
func newSessionBinding(key []byte) sessionBinding {
	if len(key) == 0 {
		return sessionBinding{}
	}
	return sessionBinding{key: key}
}

// tag computes the tag of an upstream session ID into dst.
func (sb *sessionBinding) tag(dst *[sessionTagLen]byte, id string) {
	var sum [sha2.Size]byte
	mac := sha2.NewMAC(sb.key)
	mac.Write([]byte(id))
	base64.RawURLEncoding.Encode(dst[:], mac.Sum(sum[:0])[:16])
}

// wrap returns the session ID the client is given for the upstream's id, or false when the
// bundle has no session key (the ID is then withheld: a session cannot be bound).
func (sb *sessionBinding) wrap(id string) (string, bool) {
	if sb.key == nil {
		return "", false
	}
	if id == sb.lastID && sb.lastWrapped != "" {
		return sb.lastWrapped, true
	}
	var t [sessionTagLen]byte
	sb.tag(&t, id)
	w := string(t[:]) + "." + id
	// lastID is read from w, not kept as id: id lies in the host's response-header buffer,
	// which a cached bundle must not hold on to.
	sb.lastWrapped, sb.lastID = w, w[sessionTagLen+1:]
	return w, true
}

// unwrap returns the upstream's session ID from the client's, or false when the client's
// was not issued for this bundle's user and route.
func (sb *sessionBinding) unwrap(v string) (string, bool) {
	if sb.key == nil || len(v) < sessionTagLen+2 || v[sessionTagLen] != '.' {
		return "", false
	}
	if v == sb.lastWrapped {
		return sb.lastID, true
	}
	id := v[sessionTagLen+1:]
	var t [sessionTagLen]byte
	sb.tag(&t, id)
	if !sha2.Equal(t[:], []byte(v[:sessionTagLen])) {
		return "", false
	}
	// The pair is kept as a copy: v lies in the request's header buffer, which a cached
	// bundle would otherwise hold on to — its whole size, outside the cache's byte bound.
	v = strings.Clone(v)
	sb.lastWrapped, sb.lastID = v, v[sessionTagLen+1:]
	return sb.lastID, true
}

// admitToServer refuses, once the user is known, what an MCP server route must not forward:
// a body the upstream could decode otherwise than the filter (its Content-Type parameters),
// and a session ID (Mcp-Session-Id, or the legacy transport's query parameter) that was not
// issued to this user on this route. It sets upstreamSession and upstreamPath.
func (s *stream) admitToServer(b *bundle) bool {
	if s.unsupportedCT {
		s.refuse(metricRejected, policy.ReasonMCPContentTypeUnsupported)
		s.replyError(415, "unsupported_media_type", "MCP requests must be application/json with no parameter but charset=utf-8")
		return false
	}
	// CGI, WSGI and Rack read mcp_session_id as Mcp-Session-Id: such a spelling is a session
	// header too, and is replaced by the canonical one when forwarded.
	n, v := 0, ""
	if s.idx.sessionLen { // else no header could be one
		for i := range s.hdrs {
			if name := s.hdrs[i].Name; isName(name, sessionHeader) || isUnderscoreSpelling(name, sessionHeader) {
				n++
				v = s.hdrs[i].Value
				if name != sessionHeader {
					s.sessionAliases = append(s.sessionAliases, name)
				}
			}
		}
	}
	if n > 1 {
		s.refuse(metricRejected, policy.ReasonRequestAmbiguous)
		s.replyError(400, "invalid_request", "more than one Mcp-Session-Id header")
		return false
	}
	if n == 1 {
		id, ok := b.session.unwrap(v)
		if !ok {
			s.refuseSession()
			return false
		}
		s.upstreamSession = id
	}
	// The legacy HTTP+SSE transport's session, in the query (legacysse.go).
	path, _ := s.indexed(hPath)
	start, end, n := sessionParam(path)
	if n > 1 {
		s.refuse(metricRejected, policy.ReasonRequestAmbiguous)
		s.replyError(400, "invalid_request", "more than one session parameter in the query")
		return false
	}
	if n == 1 {
		v, ok := queryUnescape(path[start:end])
		id := ""
		if ok {
			id, ok = b.session.unwrap(v)
		}
		if !ok {
			s.refuseSession()
			return false
		}
		s.upstreamPath = path[:start] + queryEscape(id) + path[end:]
	}
	return true
}

// refuseSession answers a request whose session was not issued to its user on its route as
// for an unknown session.
func (s *stream) refuseSession() {
	s.refuse(metricRejected, policy.ReasonMCPSessionUnknown)
	s.replyJSONRPCError(404, jsonrpc.AppendErrorResponse(nil, "", jsonrpc.CodeDenied, "Session not found", s.requestID()))
}

// bindSession replaces the upstream's session ID in the response with the one bound to the
// user and route; without a bundle or a session key the ID is withheld.
func (s *stream) bindSession(id string) {
	if s.bundle != nil && id != "" {
		if w, ok := s.bundle.session.wrap(id); ok {
			s.h.SetResponseHeader(sessionHeader, w)
			return
		}
	}
	s.h.RemoveResponseHeader(sessionHeader)
}

// isUnderscoreSpelling reports whether name is canonical spelled with some '-' as '_', as
// servers that map both to '_' (CGI, WSGI, Rack) read it.
func isUnderscoreSpelling(name, canonical string) bool {
	// The length test stays in the callers' loops over the headers (this is inlined): a call
	// per header costs more in the wasm filter than the comparison.
	return len(name) == len(canonical) && underscoreSpelling(name, canonical)
}

// underscoreSpelling is isUnderscoreSpelling for names of the canonical length: name with
// each '_' read as '-' is canonical, and name has at least one '_'.
func underscoreSpelling(name, canonical string) bool {
	underscore := false
	for i := 0; i < len(name) && i < len(canonical); i++ {
		switch c := name[i]; {
		case c == '_' && canonical[i] == '-':
			underscore = true
		case c != canonical[i] || c == '_':
			return false
		}
	}
	return underscore
}
