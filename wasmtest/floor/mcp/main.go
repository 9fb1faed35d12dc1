//go:build wasip1

//lint:file-ignore U1000 the functions are exported to the host with //go:wasmexport

// Command mcp is the floor module of the least MCP work: what floor/reads reads, plus the
// bearer token's cached decision looked up on the request headers and, at the end of the
// body, the body validated and its method and tool read, the tool checked against the
// decision's allow set and the filter's six decision properties set (wasmtest/floor).
package main

import (
	"strconv"

	"github.com/mcpmesh/gateway/filter/jsonrpc"
	"github.com/mcpmesh/gateway/wasmtest/floor"
	"github.com/mcpmesh/gateway/wasmtest/floor/internal/guest"
)

// The properties the filter publishes on an allowed call (filter/plugin/outcome.go), under
// the same names so that the host stores as many bytes.
const (
	propMethod    = "mcp_gateway.mcp_method"
	propTool      = "mcp_gateway.mcp_tool"
	propAllow     = "mcp_gateway.allow"
	propReasons   = "mcp_gateway.reasons"
	propUser      = "mcp_gateway.user"
	propRequestID = "mcp_gateway.request_id"
	// read is floor/reads' property, set on a request without a body.
	read = "floor.request_bytes"
)

// stream is what the module keeps of a request between its callbacks.
type stream struct {
	decision  *floor.Decision
	requestID string
	msg       [1]jsonrpc.Message
}

// The module's one VM: exports are package-level functions, so their state is too.
var (
	cache   = floor.NewCache()
	streams = map[uint32]*stream{}
	// standIn is the decision cached for a token not seen before, in place of the token
	// service's answer (the filter's check call, made once per token and route).
	standIn = &floor.Decision{User: "floor-user", Tools: []string{"echo", "add"}}
)

//go:wasmexport proxy_on_context_create
func onContextCreate(contextID, parentID uint32) {
	if parentID != 0 {
		streams[contextID] = &stream{}
	}
}

//go:wasmexport proxy_on_vm_start
func onVMStart(rootID uint32, size int32) bool { return true }

//go:wasmexport proxy_on_configure
func onConfigure(rootID uint32, size int32) bool { return true }

//go:wasmexport proxy_on_request_headers
func onRequestHeaders(contextID uint32, n int32, endOfStream bool) uint32 {
	s := streams[contextID]
	if s == nil {
		return guest.Continue
	}
	pairs := guest.HeaderPairs(guest.RequestHeaders)
	s.requestID, _ = floor.HeaderValue(pairs, "x-request-id")
	if auth, ok := floor.HeaderValue(pairs, "authorization"); ok {
		if tok, ok := floor.BearerToken(auth); ok {
			if s.decision = cache.Get(tok); s.decision == nil {
				cache.Put(tok, standIn)
				s.decision = standIn
			}
		}
	}
	if endOfStream {
		guest.SetProperty(read, strconv.Itoa(len(pairs)))
	}
	return guest.Continue
}

//go:wasmexport proxy_on_request_body
func onRequestBody(contextID uint32, size int32, endOfStream bool) uint32 {
	s := streams[contextID]
	if s == nil || !endOfStream {
		return guest.Pause // buffer the body until its end
	}
	call, ok := floor.ReadCall(&s.msg, guest.RequestBody(size))
	switch {
	case !ok:
		guest.Reply(400)
		return guest.Pause
	case s.decision == nil:
		guest.Reply(401)
		return guest.Pause
	case call.Method == jsonrpc.MethodToolsCall && !s.decision.Allows(call.Tool):
		guest.Reply(403)
		return guest.Pause
	}
	guest.SetProperty(propMethod, call.Method)
	guest.SetProperty(propTool, call.Tool)
	guest.SetProperty(propAllow, "true")
	guest.SetProperty(propReasons, "tool_allowed")
	guest.SetProperty(propUser, s.decision.User)
	guest.SetProperty(propRequestID, s.requestID)
	return guest.Continue
}

//go:wasmexport proxy_on_request_trailers
func onRequestTrailers(contextID uint32, n int32) uint32 { return guest.Continue }

//go:wasmexport proxy_on_response_headers
func onResponseHeaders(contextID uint32, n int32, endOfStream bool) uint32 {
	guest.HeaderPairs(guest.ResponseHeaders)
	return guest.Continue
}

//go:wasmexport proxy_on_response_body
func onResponseBody(contextID uint32, size int32, endOfStream bool) uint32 { return guest.Continue }

//go:wasmexport proxy_on_response_trailers
func onResponseTrailers(contextID uint32, n int32) uint32 { return guest.Continue }

//go:wasmexport proxy_on_log
func onLog(contextID uint32) {}

//go:wasmexport proxy_on_done
func onDone(contextID uint32) bool { return true }

//go:wasmexport proxy_on_delete
func onDelete(contextID uint32) { delete(streams, contextID) }

func main() {}
