package plugin

import (
	"bytes"
	"strings"

	"github.com/mcpmesh/gateway/filter/jsonrpc"
	"github.com/mcpmesh/gateway/shared/ascii"
	"github.com/mcpmesh/gateway/shared/pluginconf"
	"github.com/mcpmesh/gateway/shared/policy"
)

// Tool lists filtered by policy (docs/tool-lists.md). On an MCP server route, the response
// to a tools/list request the filter let through lists only the tools the user may call:
// each tool is evaluated as a tools/call of it, with the same identity, by the route policy.
// The responses to the tools/list requests of the stream are matched by JSON-RPC id (by
// value); any other response whose result has tools, in the answer to any POST or on the
// event-stream GET, is rewritten too: clients match responses by id across streams, so a
// server may answer a tools/list in the stream of a later POST. Those other responses are
// read only when the text may name tools (jsonrpc.MayHoldToolList), and an answer or event
// over the bound that does not is passed on unread, watched for the name to its end.
//
//   - application/json: the body is held (Envoy buffers it) until it ends, then rewritten;
//   - text/event-stream: events go on one by one as they complete, each read and rewritten
//     if it answers the list; the filter keeps the incomplete event in its own memory;
//   - anything else, a compressed body, a body or event over jsonrpc.MaxToolListBytes, or
//     text the filter cannot read safely: the list is replaced by a JSON-RPC -32603 error
//     (fail closed).

// Tool-list response modes.
const (
	tlNone   = iota
	tlJSON   // application/json, held until the end
	tlSSE    // text/event-stream, rewritten event by event
	tlRefuse // not readable: the body becomes the JSON-RPC error
	tlPass   // application/json over the bound without tools: passed on, watched for the name
)

// toolListWatch is the state of a response whose tool lists the filter rewrites.
type toolListWatch struct {
	ids     []string // jsonrpc.IDKey of the tools/list requests let through
	rawIDs  []string // their raw ids, for the error that replaces an unreadable list
	mode    int
	carry   []byte // tlSSE: the incomplete event held back
	size    int    // tlJSON: the body size Envoy buffers
	dead    bool   // the list was refused: the rest of the body is dropped
	private bool   // force cacheScope private (MCP 2026-07-28)
	started bool   // tlSSE: the stream's first bytes were seen (byte order mark)
	anyID   bool   // every tools result is rewritten, whatever its id
	passing bool   // tlSSE: an event over the bound without tools is passed on unread
	tail    []byte // tlPass, passing: the last bytes passed on, to find a name split by a chunk
}

// scan reports whether the watch rewrites only lists of other requests (no tools/list was
// asked for on this stream): text that cannot name tools is not read.
func (tl *toolListWatch) scan() bool { return tl.anyID && len(tl.ids) == 0 }

// watch starts watching the response with tl. The watch lives in the stream itself (one
// allocation less per allowed POST, which costs more than the copy in the wasm filter).
func (s *stream) watch(tl toolListWatch) {
	s.tlWatch = tl
	s.tl = &s.tlWatch
}

// watchEventStreamLists rewrites the tool lists of an event-stream GET on an MCP server
// route: a server may answer a request there (after a 202 to the POST, or replaying a stream
// resumed with Last-Event-ID), and clients take the answer. The filter has not seen those
// requests, so every response whose result has tools is rewritten.
func (s *stream) watchEventStreamLists() {
	if s.route.NoToolListFilter {
		return
	}
	s.watch(toolListWatch{mode: tlSSE, anyID: true, private: s.mcpVersion >= "2026-07-28"})
}

// asksForEventStream reports whether the stream is an allowed GET on an MCP server route
// that asks for an event stream (the MCP client's event-stream GET), answered 2xx. A client
// takes any 2xx
// answer to it as the stream, whatever its media type or encoding (the TS SDK checks only
// response.ok), so the filter reads every such answer for tool lists, or refuses it.
func (s *stream) asksForEventStream() bool {
	if s.route.Kind != pluginconf.KindServer || s.bundle == nil {
		return false
	}
	if m, _ := s.indexed(hMethod); m != "GET" {
		return false
	}
	for _, h := range s.respHdrs {
		if h.Name == ":status" && (len(h.Value) != 3 || h.Value[0] != '2') {
			return false // an error answer: clients do not read it as the stream
		}
	}
	for i := range s.hdrs {
		if s.hdrs[i].Name == "accept" && strings.Contains(strings.ToLower(s.hdrs[i].Value), "text/event-stream") {
			return true
		}
	}
	return false
}

// stripAcceptEncoding keeps MCP server routes' answers uncompressed, so that the filter can
// read the tool lists in them (a compressed list is refused).
func (s *stream) stripAcceptEncoding() {
	if s.route.Kind == pluginconf.KindServer && !s.route.NoToolListFilter {
		if s.idx.acceptEncoding { // a host call only when there is something to remove
			s.h.RemoveRequestHeader("accept-encoding")
		}
	}
}

// watchToolLists remembers the tools/list requests of an allowed body whose responses the
// filter rewrites; the answer to every allowed POST is watched for other tool lists.
func (s *stream) watchToolLists() {
	if s.route.Kind != pluginconf.KindServer || s.route.NoToolListFilter || !s.isPOST {
		return
	}
	s.watch(toolListWatch{anyID: true, private: s.mcpVersion >= "2026-07-28"})
	for i := range s.messages {
		m := &s.messages[i]
		if m.Method != "tools/list" || m.ID == "" || m.Kind != jsonrpc.KindRequest {
			continue
		}
		s.tl.ids = append(s.tl.ids, jsonrpc.IDKey(m.ID))
		s.tl.rawIDs = append(s.tl.rawIDs, m.ID)
	}
}

// toolListHeaders chooses how the response is read, from its headers.
func (s *stream) toolListHeaders(endOfStream bool) {
	tl := s.tl
	if endOfStream {
		tl.mode = tlNone
		return
	}
	sse, json, other, encoded, status := false, false, false, false, ""
	for _, h := range s.respHdrs {
		switch h.Name {
		case ":status":
			status = h.Value
		case "content-type":
			mt, _, _ := strings.Cut(h.Value, ";")
			switch mt = trimOWS(mt); {
			case ascii.EqualFold(mt, "application/json"):
				json = true
			case ascii.EqualFold(mt, "text/event-stream"):
				sse = true
			default:
				other = true
			}
		case "content-encoding":
			if !ascii.EqualFold(trimOWS(h.Value), "identity") {
				encoded = true
			}
		}
	}
	success := len(status) == 3 && status[0] == '2'
	switch {
	case encoded || other || (json && sse):
		if !success && !encoded && !json && !sse {
			tl.mode = tlNone // an error page, not a list
			return
		}
		tl.mode = tlRefuse
		s.h.RemoveResponseHeader("content-encoding")
		s.h.SetResponseHeader("content-type", "application/json")
	case json:
		tl.mode = tlJSON
	case sse:
		tl.mode = tlSSE
	case success && tl.scan():
		tl.mode = tlNone // no media type: clients read no message in it
		return
	case success:
		tl.mode = tlRefuse // no media type
		s.h.SetResponseHeader("content-type", "application/json")
	default:
		tl.mode = tlNone
		return
	}
	s.h.RemoveResponseHeader("content-length") // the body changes length
}

// toolListBody handles a response body callback of a watched response.
func (s *stream) toolListBody(bodySize int, endOfStream bool) Action {
	tl := s.tl
	if tl.dead {
		s.h.ReplaceResponseBody(bodySize, nil)
		return Continue
	}
	switch tl.mode {
	case tlRefuse:
		s.refuseToolList(bodySize, "response not application/json or text/event-stream, or encoded")
		return Continue
	case tlJSON:
		tl.size = bodySize
		if bodySize > jsonrpc.MaxToolListBytes {
			body := s.h.ResponseBody(bodySize)
			if tl.scan() && !jsonrpc.MayHoldToolList(body) {
				// An answer to another request, too long to hold: passed on, watched.
				tl.mode = tlPass
				tl.tail = keepTail(nil, body)
				return Continue
			}
			s.refuseToolList(bodySize, "response longer than the bound")
			return Continue
		}
		if !endOfStream {
			return Pause // Envoy buffers; the next callback sees the whole body
		}
		s.finishJSONList(bodySize)
		return Continue
	case tlSSE:
		s.toolListEvents(s.h.ResponseBody(bodySize), bodySize, endOfStream)
	case tlPass:
		chunk := s.h.ResponseBody(bodySize)
		if jsonrpc.MayHoldToolList(append(tl.tail, chunk...)) {
			s.dropRest(bodySize, "response longer than the bound names tools")
			return Continue
		}
		tl.tail = keepTail(tl.tail, chunk)
	}
	return Continue
}

// dropRest drops the rest of a body whose beginning is passed on already: the client never
// gets the end of the JSON text or of the event, so it reads no message from it.
func (s *stream) dropRest(size int, why string) {
	s.h.ReplaceResponseBody(size, nil)
	s.toolListRefused(why)
	s.tl.dead = true
}

// keepTail returns the last jsonrpc.MarkerOverlap bytes of tail+b, in tail's storage.
func keepTail(tail, b []byte) []byte {
	if len(b) >= jsonrpc.MarkerOverlap {
		return append(tail[:0], b[len(b)-jsonrpc.MarkerOverlap:]...)
	}
	tail = append(tail, b...)
	if len(tail) > jsonrpc.MarkerOverlap {
		tail = append(tail[:0], tail[len(tail)-jsonrpc.MarkerOverlap:]...)
	}
	return tail
}

// OnResponseTrailers ends the response: a body the filter holds is rewritten now (Envoy
// hands the filter its buffer), never released as it is.
func (s *stream) OnResponseTrailers(int) Action {
	if s.tl == nil || s.tl.dead {
		return Continue
	}
	switch s.tl.mode {
	case tlJSON:
		s.finishJSONList(s.tl.size)
	case tlRefuse:
		s.refuseToolList(s.tl.size, "response not application/json or text/event-stream, or encoded")
	case tlSSE:
		// An incomplete last event is dropped, as event-stream readers drop it.
		s.tl.carry = nil
	}
	return Continue
}

// finishJSONList rewrites the whole buffered application/json body.
func (s *stream) finishJSONList(size int) {
	out, changed, err := s.rewriteLists(s.h.ResponseBody(size))
	if err != nil {
		s.refuseToolList(size, err.Error())
		return
	}
	if changed {
		s.h.ReplaceResponseBody(size, out)
	}
	s.tl.dead = true // nothing more to read
}

// toolListEvents passes on the complete events of carry+chunk, each rewritten if it answers a
// list, and keeps the incomplete one back.
func (s *stream) toolListEvents(chunk []byte, size int, endOfStream bool) {
	tl := s.tl
	data := chunk
	if len(tl.carry) > 0 {
		data = append(tl.carry, chunk...)
		tl.carry = nil
	}
	var out []byte
	changed := len(data) != len(chunk)
	if tl.passing {
		// The rest of an event over the bound that named no tools so far.
		seen := append(tl.tail, data...)
		n := eventEnd(append([]byte("x"), seen...)) // the event has fields: "x" stands for them
		if n >= 0 {
			n = max(n-1-len(tl.tail), 0) // where the event ends in data
		}
		end := n
		if end < 0 {
			end = len(data)
		}
		if jsonrpc.MayHoldToolList(seen[:len(tl.tail)+end]) {
			s.dropRest(size, "event longer than the bound names tools")
			return
		}
		if n < 0 {
			tl.tail = keepTail(tl.tail, data)
			if changed {
				s.h.ReplaceResponseBody(size, data)
			}
			return
		}
		tl.passing, tl.tail = false, nil
		out = append(out, data[:n]...)
		data = data[n:]
		changed = true
	}
	if !tl.started {
		// Event-stream readers drop a byte order mark that starts the stream; so does the
		// filter, or the first field would not read as data to it while it does to them.
		if len(data) < len(utf8BOM) && !endOfStream && bytes.HasPrefix(utf8BOM, data) {
			tl.carry = append([]byte(nil), data...)
			s.h.ReplaceResponseBody(size, nil)
			return
		}
		tl.started = true
		if bytes.HasPrefix(data, utf8BOM) {
			data = data[len(utf8BOM):]
			changed = true
		}
	}
	for len(data) > 0 {
		n := eventEnd(data)
		if n < 0 {
			if !endOfStream {
				break
			}
			n = len(data) // the last event, unterminated
		}
		if s.sseFirstEvent {
			// The legacy transport's endpoint event (legacysse.go): its session is bound.
			s.sseFirstEvent = false
			if ev, ok := rewriteEndpointEvent(data[:n], &s.bundle.session); ok {
				out = append(out, ev...)
				changed = true
				data = data[n:]
				continue
			}
		}
		ev, evChanged, err := s.rewriteEvent(data[:n])
		if err != nil {
			out = appendErrorEvent(out, s.toolListErrorBody())
			s.toolListRefused(err.Error())
			tl.dead = true
			s.h.ReplaceResponseBody(size, out)
			return
		}
		out = append(out, ev...)
		changed = changed || evChanged
		data = data[n:]
	}
	if len(data) > 0 {
		if len(data) > jsonrpc.MaxToolListBytes && tl.scan() && !jsonrpc.MayHoldToolList(data) {
			// An event over the bound that names no tools so far: passed on, watched.
			out = append(out, data...)
			tl.passing, tl.tail = true, keepTail(nil, data)
			s.h.ReplaceResponseBody(size, out)
			return
		}
		if len(data) > jsonrpc.MaxToolListBytes {
			out = appendErrorEvent(out, s.toolListErrorBody())
			s.toolListRefused("event longer than the bound")
			tl.dead = true
			s.h.ReplaceResponseBody(size, out)
			return
		}
		tl.carry = append([]byte(nil), data...)
		changed = true
	}
	if changed {
		s.h.ReplaceResponseBody(size, out)
	}
}

// rewriteEvent returns the complete event ev with the lists its data answers rewritten.
// Events without data lines pass as they are.
func (s *stream) rewriteEvent(ev []byte) ([]byte, bool, error) {
	var data []byte
	nData := 0
	for line := range eventLines(ev) {
		if v, ok := fieldValue(line, "data"); ok {
			switch nData {
			case 0:
				data = v // one data line, the usual case: no copy
			case 1:
				data = append(append(append([]byte(nil), data...), '\n'), v...)
			default:
				data = append(append(data, '\n'), v...)
			}
			nData++
		}
	}
	if nData == 0 {
		return ev, false, nil
	}
	out, changed, err := s.rewriteLists(data)
	if err != nil || !changed {
		return ev, false, err
	}
	// The other fields stay where they were; the data lines become the new data, split at
	// its line breaks (JSON whitespace only) into data lines that readers join again.
	var b []byte
	wrote := false
	for line := range eventLines(ev) {
		if _, ok := fieldValue(line, "data"); ok {
			if !wrote {
				b = appendDataLines(b, out)
				wrote = true
			}
			continue
		}
		b = append(b, line...)
		b = append(b, '\n')
	}
	return append(b, '\n'), true, nil
}

// rewriteLists rewrites the tool lists in one JSON-RPC body, counting what it did.
func (s *stream) rewriteLists(body []byte) ([]byte, bool, error) {
	if s.tl.scan() && !jsonrpc.MayHoldToolList(body) {
		return body, false, nil // names no tools: read by no client as a list
	}
	in := s.bundle.input
	in.MCPMethod = policy.MethodToolsCall
	f := jsonrpc.ToolListFilter{
		IDs:          s.tl.ids,
		AnyID:        s.tl.anyID,
		ForcePrivate: s.tl.private,
		Allow: func(name, raw string) bool {
			in.MCPTool = name
			return s.route.policy.Evaluate(&in).Allow && s.pinnedTool(name, raw)
		},
	}
	out, res, err := jsonrpc.RewriteToolLists(body, &f)
	if err != nil {
		return nil, false, err
	}
	for range res.Lists {
		s.f.metrics.inc(metricToolsListFiltered)
	}
	return out, res.Lists > 0, nil
}

// refuseToolList replaces the body with the JSON-RPC error and drops the rest.
func (s *stream) refuseToolList(size int, why string) {
	body := s.toolListErrorBody()
	if s.tl.mode == tlSSE {
		body = appendErrorEvent(nil, body)
	}
	s.h.ReplaceResponseBody(size, body)
	s.toolListRefused(why)
	s.tl.dead = true
}

// toolListRefused counts and logs a refused list; the log never quotes the response.
func (s *stream) toolListRefused(why string) {
	s.f.metrics.inc(metricToolsListRefused)
	s.h.Log(LogWarn, "mcp-gateway: tools/list response refused (request "+s.requestID()+", route "+s.route.ID+"): "+why)
}

// toolListErrorBody is the JSON-RPC error in place of an unreadable list: with the request's
// id when one tools/list was asked for, null otherwise.
func (s *stream) toolListErrorBody() []byte {
	id := ""
	if len(s.tl.rawIDs) == 1 {
		id = s.tl.rawIDs[0]
	}
	return jsonrpc.ToolListErrorBody(id, s.requestID())
}

func appendErrorEvent(b, body []byte) []byte {
	b = append(b, "event: message\n"...)
	b = appendDataLines(b, body)
	return append(b, '\n')
}

// appendDataLines appends data as data lines, one per line of it.
func appendDataLines(b, data []byte) []byte {
	for {
		i := lineEnd(data)
		if i < 0 {
			break
		}
		b = append(append(append(b, "data: "...), data[:i]...), '\n')
		if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
			i++
		}
		data = data[i+1:]
	}
	return append(append(append(b, "data: "...), data...), '\n')
}

// eventLines yields the lines of an event without their line ends (CRLF, LF or CR).
func eventLines(ev []byte) func(func([]byte) bool) {
	return func(yield func([]byte) bool) {
		for len(ev) > 0 {
			i := lineEnd(ev)
			if i < 0 {
				yield(ev)
				return
			}
			line := ev[:i]
			if ev[i] == '\r' && i+1 < len(ev) && ev[i+1] == '\n' {
				i++
			}
			ev = ev[i+1:]
			if len(line) == 0 {
				continue // the empty line that ends the event
			}
			if !yield(line) {
				return
			}
		}
	}
}

// fieldValue returns the value of line if it is the field name (one leading space removed,
// as event-stream readers do).
func fieldValue(line []byte, name string) ([]byte, bool) {
	if len(line) < len(name) || string(line[:len(name)]) != name {
		return nil, false
	}
	rest := line[len(name):]
	if len(rest) == 0 {
		return rest, true // "data" alone: an empty value
	}
	if rest[0] != ':' {
		return nil, false
	}
	rest = rest[1:]
	if len(rest) > 0 && rest[0] == ' ' {
		rest = rest[1:]
	}
	return rest, true
}

// lineEnd returns the index of the first CR or LF in b, or -1. (bytes.IndexByte is assembly in
// the wasm build; bytes.IndexAny loops in Go, byte by byte.)
func lineEnd(b []byte) int {
	n := bytes.IndexByte(b, '\n')
	lim := b
	if n >= 0 {
		lim = b[:n]
	}
	if r := bytes.IndexByte(lim, '\r'); r >= 0 {
		return r
	}
	return n
}

var utf8BOM = []byte{0xef, 0xbb, 0xbf}
