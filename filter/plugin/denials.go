package plugin

import (
	"strconv"
	"strings"

	"github.com/mcpmesh/gateway/filter/jsonrpc"
	"github.com/mcpmesh/gateway/shared/jsontext"
	"github.com/mcpmesh/gateway/shared/pluginconf"
	"github.com/mcpmesh/gateway/shared/policy"
)

// replyDenied answers a request refused by policy (docs/decisions.md, "Denied tool calls").
// decisions holds the decision of each message (nil when the request carried none).
//
//   - A tools/call request that policy denies is answered as the tool's own failure would be:
//     HTTP 200 with a CallToolResult whose isError is true and whose text names the tool, the
//     route, the reasons and the request ID. MCP clients hand that to the model; an HTTP error
//     or a JSON-RPC error becomes an exception in the client instead.
//   - Any other denied request gets 403 with JSON-RPC error -32001 and the request ID.
//   - Nothing of a batch is forwarded when one message is denied, and every request in it is
//     answered: a denied one as above, an allowed one with -32001 saying which message was
//     denied. The status is 200 when every denial was a tool call, 403 otherwise.
//
// Results are framed as an event stream when the client accepts only text/event-stream.
func (s *stream) replyDenied(decisions []policy.Decision) {
	rid := s.requestID()
	if s.route.Kind != pluginconf.KindServer || len(s.messages) == 0 || decisions == nil {
		if s.route.Kind == pluginconf.KindServer {
			s.replyJSONRPCError(403, jsonrpc.DeniedBody("", "", rid))
			return
		}
		s.replyError(403, "forbidden", "access denied by gateway policy (request id "+rid+")")
		return
	}
	firstDenied := -1
	for i := range decisions {
		if !decisions[i].Allow {
			firstDenied = i
			break
		}
	}
	// The status first: 403 when a denial is not a tool call's (a notification, a response,
	// another method), 200 otherwise; with 200 a client that accepts only an event stream
	// gets its answers as events. Every request of the body is answered, written straight
	// into the reply's body.
	status, requests := 200, 0
	for i := range s.messages {
		m := &s.messages[i]
		if m.Kind == jsonrpc.KindRequest {
			requests++
		}
		if !decisions[i].Allow && (m.Kind != jsonrpc.KindRequest || m.Method != policy.MethodToolsCall) {
			status = 403
		}
	}
	if requests == 0 {
		s.replyJSONRPCError(403, jsonrpc.DeniedBody("", "", rid))
		return
	}
	sse := status == 200 && s.acceptsOnlyEventStream()
	body := make([]byte, 0, 640*requests)
	if s.batch && !sse {
		body = append(body, '[')
	}
	n := 0
	for i := range s.messages {
		m := &s.messages[i]
		if m.Kind != jsonrpc.KindRequest {
			continue // notifications and responses get no answer
		}
		switch {
		case sse:
			body = append(body, "event: message\ndata: "...)
		case n > 0:
			body = append(body, ',')
		}
		n++
		switch {
		case decisions[i].Allow:
			msg := "Not forwarded: message " + strconv.Itoa(firstDenied+1) + " of this batch"
			if id := s.messages[firstDenied].ID; id != "" {
				msg += " (id " + id + ")"
			}
			msg += " was denied by gateway policy, and a batch is forwarded whole or not at all"
			body = jsonrpc.AppendErrorResponse(body, m.ID, jsonrpc.CodeDenied, msg, rid)
		case m.Method == policy.MethodToolsCall:
			body = s.appendDeniedToolResult(body, m, decisions[i])
		default:
			body = jsonrpc.AppendErrorResponse(body, m.ID, jsonrpc.CodeDenied, jsonrpc.MessageDenied, rid)
		}
		if sse {
			body = append(body, "\n\n"...)
		}
	}
	if sse {
		s.reply(200, replyHeaders("text/event-stream"), body)
		return
	}
	if s.batch {
		body = append(body, ']')
	}
	s.replyJSONRPCError(status, body)
}

// deniedMetaKey is the _meta member of a denied tool call's result that holds the denial's
// facts for programs (the text holds them for the model).
const deniedMetaKey = "dev.mcpmesh/denial"

// appendDeniedToolResult appends the JSON-RPC response to a tools/call that policy denied: a
// CallToolResult with isError, on revision 2026-07-28 with resultType "complete".
//
// The text is written straight into the body when its parts need no escaping (the common
// case: ASCII names), which is much cheaper in the wasm filter than building it and escaping
// it byte by byte; otherwise it is built and escaped. Both give the same bytes.
func (s *stream) appendDeniedToolResult(dst []byte, m *jsonrpc.Message, d policy.Decision) []byte {
	rid := s.requestID()
	routeName := s.route.Name
	if routeName == "" {
		routeName = s.route.ID
	}
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = append(dst, m.ID...)
	dst = append(dst, `,"result":{"content":[{"type":"text","text":`...)
	const (
		textStart  = "Denied by the MCP gateway: the policy of route "
		textTool   = " does not allow the tool "
		textEnd    = "). The tool did not run; retrying will not help, ask the gateway's operator for access."
		reasonsSep = ", "
	)
	if plainJSON(routeName) && plainJSON(m.Tool) && plainJSON(rid) {
		dst = append(dst, `"`+textStart+`\"`...)
		dst = append(dst, routeName...)
		dst = append(dst, `\"`+textTool+`\"`...)
		dst = append(dst, m.Tool...)
		dst = append(dst, `\" (reasons: `...)
		dst = d.AllowWhyFalse.AppendJoined(dst, reasonsSep)
		dst = append(dst, "; request ID "...)
		dst = append(dst, rid...)
		dst = append(dst, textEnd+`"`...)
	} else {
		var b strings.Builder
		b.WriteString(textStart + quote(routeName) + textTool + quote(m.Tool) + " (reasons: ")
		n := 0
		for r := range d.AllowWhyFalse.All() {
			if n > 0 {
				b.WriteString(reasonsSep)
			}
			b.WriteString(r.String())
			n++
		}
		b.WriteString("; request ID " + rid + textEnd)
		dst = jsontext.AppendString(dst, b.String())
	}
	dst = append(dst, `}],"isError":true`...)
	if jsonrpc.IsModern(s.mcpVersion) {
		dst = append(dst, `,"resultType":"complete"`...)
	}
	dst = append(dst, `,"_meta":{"`+deniedMetaKey+`":{"tool":`...)
	dst = jsontext.AppendString(dst, m.Tool)
	dst = append(dst, `,"route":`...)
	dst = jsontext.AppendString(dst, s.route.ID)
	dst = append(dst, `,"reasons":[`...)
	// Reason names need no escaping (policy.Reasons.AppendJoined); an empty set stays [].
	mark := len(dst)
	if dst = d.AllowWhyFalse.AppendJoined(append(dst, '"'), `","`); len(dst) == mark+1 {
		dst = dst[:mark]
	} else {
		dst = append(dst, '"')
	}
	dst = append(dst, `],"request-id":`...)
	dst = jsontext.AppendString(dst, rid)
	return append(dst, "}}}}"...)
}

// plainJSON reports whether s is printable ASCII that JSON (as jsontext.AppendString writes it) and
// strconv.Quote both leave as it is.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' || c > '~' || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// acceptsOnlyEventStream reports whether the request's Accept lists text/event-stream and
// nothing that admits application/json.
func (s *stream) acceptsOnlyEventStream() bool {
	sse, json := false, false
	for i := range s.hdrs {
		if s.hdrs[i].Name != "accept" {
			continue
		}
		for _, part := range strings.Split(s.hdrs[i].Value, ",") {
			mt, _, _ := strings.Cut(part, ";")
			switch mt = strings.ToLower(trimOWS(mt)); mt {
			case "text/event-stream":
				sse = true
			case "application/json", "application/*", "*/*":
				json = true
			}
		}
	}
	return sse && !json
}
