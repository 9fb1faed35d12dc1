package plugin

import (
	"bytes"
	"strings"

	"github.com/mcpmesh/gateway/shared/ascii"
)

// Session IDs of the legacy HTTP+SSE transport (MCP 2024-11-05), bound like Mcp-Session-Id
// (session.go). That transport has no session header: a GET opens an event stream whose first
// event, "endpoint", names the URL the client posts its messages to, with the session in the
// query (sessionId in the TypeScript SDK and mcp-go, session_id in the Python SDK, sessionid in
// the Go SDK), and the server runs whatever is posted there in that session. The filter wraps
// the session in that first event, and on requests unwraps it from the query, refusing one
// that was not issued to the user on the route.

// maxEndpointEvent bounds how much of an event stream the filter holds while it looks for the
// end of the first event; a longer first event passes unchanged (its session cannot then be
// used through the gateway: the raw ID is refused).
const maxEndpointEvent = 4096

// isSessionParam reports whether a query parameter name (as sent, percent-encoded or not) names
// a session for some server. It compares what servers compare: the name percent-decoded, cut
// at the first '[' (qs reads sessionId[]= and sessionId[0]= as sessionId), without '_', '.',
// ' ' and '-' (PHP turns '.' and ' ' into '_'), in any case (Unicode folding: it only widens
// what is checked).
func isSessionParam(name string) bool {
	if strings.ContainsAny(name, "%+") {
		if n, ok := queryUnescape(name); ok {
			name = n
		}
	}
	if i := strings.IndexByte(name, '['); i >= 0 {
		name = name[:i]
	}
	if strings.ContainsAny(name, "_. -") {
		// Byte by byte, as strings.NewReplacer("_", "", ".", "", " ", "", "-", "") does;
		// a Replacer costs the module 20 KB.
		kept := make([]byte, 0, len(name))
		for i := range len(name) {
			if c := name[i]; c != '_' && c != '.' && c != ' ' && c != '-' {
				kept = append(kept, c)
			}
		}
		name = string(kept)
	}
	return strings.EqualFold(name, "sessionid")
}

// sessionParam finds the session parameters in the query of uri (split at & and at ;, as
// some servers do): n is how many there are, and uri[start:end] the value of the last.
func sessionParam(uri string) (start, end, n int) {
	q := strings.IndexByte(uri, '?')
	if q < 0 {
		return 0, 0, 0
	}
	stop := len(uri)
	if h := strings.IndexByte(uri[q:], '#'); h >= 0 {
		stop = q + h
	}
	for i := q + 1; i <= stop; {
		j := strings.IndexAny(uri[i:stop], "&;")
		if j < 0 {
			j = stop - i
		}
		name, _, hasValue := strings.Cut(uri[i:i+j], "=")
		if isSessionParam(name) {
			n++
			start, end = i+len(name), i+j
			if hasValue {
				start++
			}
		}
		i += j + 1
	}
	return start, end, n
}

// watchesEventStream reports whether the response to this request may be a legacy endpoint
// stream whose first event the filter must bind: a 200 uncompressed event stream answering a
// GET on an MCP server route that the policy let through.
func (s *stream) watchesEventStream(status string) bool {
	if s.bundle == nil || status != "200" {
		return false
	}
	if m, _ := s.indexed(hMethod); m != "GET" {
		return false
	}
	sse := false
	for _, h := range s.respHdrs {
		switch h.Name {
		case "content-type":
			mt, _, _ := strings.Cut(h.Value, ";")
			sse = ascii.EqualFold(trimOWS(mt), "text/event-stream")
		case "content-encoding":
			if !ascii.EqualFold(trimOWS(h.Value), "identity") {
				// A compressed stream cannot be read: it passes as it is, and a session in it
				// stays unbound, so the gateway refuses it on requests.
				return false
			}
		}
	}
	return sse
}

// bindEndpointEvent holds an event stream until its first event is complete, and if it is an
// "endpoint" event whose URL carries a session, replaces the session by the bound one.
func (s *stream) bindEndpointEvent(bodySize int, endOfStream bool) Action {
	body := s.h.ResponseBody(bodySize)
	end := eventEnd(body)
	if end < 0 {
		if len(body) < maxEndpointEvent && !endOfStream {
			return Pause // the first event is not complete yet
		}
		s.sseFirstEvent = false
		return Continue
	}
	s.sseFirstEvent = false
	if ev, ok := rewriteEndpointEvent(body[:end], &s.bundle.session); ok {
		s.h.ReplaceResponseBody(end, ev)
	}
	return Continue
}

// eventEnd returns the length of the first event of an event stream, the empty line that
// ends it included, or -1 if it has not ended yet. Lines end with CRLF, LF or CR; empty lines
// and comments (":…") before the first field belong to no event and are skipped.
func eventEnd(b []byte) int {
	fields := false
	for pos := 0; pos < len(b); {
		t := lineEnd(b[pos:])
		if t < 0 {
			return -1
		}
		t += pos
		next := t + 1
		if b[t] == '\r' {
			if next == len(b) {
				return -1 // perhaps the first half of a CRLF
			}
			if b[next] == '\n' {
				next++
			}
		}
		switch {
		case t == pos && fields:
			return next // an empty line ends the event
		case t > pos && b[pos] != ':':
			fields = true
		}
		pos = next
	}
	return -1
}

// rewriteEndpointEvent returns ev with the session in the URL of its data line bound by sb,
// when ev is an "endpoint" event whose URL has exactly one session parameter.
func rewriteEndpointEvent(ev []byte, sb *sessionBinding) ([]byte, bool) {
	isEndpoint, dataStart, dataEnd := false, -1, -1
	for i := 0; i < len(ev); {
		j := bytes.IndexAny(ev[i:], "\r\n")
		if j < 0 {
			j = len(ev) - i
		}
		line := ev[i : i+j]
		switch {
		case bytes.Equal(line, []byte("event: endpoint")) || bytes.Equal(line, []byte("event:endpoint")):
			isEndpoint = true
		case bytes.HasPrefix(line, []byte("data:")):
			if dataStart >= 0 {
				return nil, false // a URL over several data lines: not an endpoint event
			}
			dataStart, dataEnd = i+len("data:"), i+j
			if dataStart < dataEnd && ev[dataStart] == ' ' {
				dataStart++
			}
		}
		i += j + 1
	}
	if !isEndpoint || dataStart < 0 {
		return nil, false
	}
	uri := string(ev[dataStart:dataEnd])
	start, end, n := sessionParam(uri)
	if n != 1 {
		return nil, false
	}
	id, ok := queryUnescape(uri[start:end])
	if !ok || id == "" {
		return nil, false
	}
	w, ok := sb.wrap(id)
	if !ok {
		return nil, false
	}
	out := make([]byte, 0, len(ev)+sessionTagLen+8)
	out = append(out, ev[:dataStart]...)
	out = append(out, uri[:start]...)
	out = append(out, queryEscape(w)...)
	out = append(out, uri[end:]...)
	return append(out, ev[dataEnd:]...), true
}
