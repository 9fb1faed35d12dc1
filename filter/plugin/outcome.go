package plugin

import (
	"unsafe"

	"github.com/mcpmesh/gateway/shared/policy"
)

// Properties the filter publishes with proxy_set_property for every request it decides or
// refuses on a route host, whatever the log level. Envoy keeps each as the filter state
// "wasm.<name>", which access logs print with %FILTER_STATE(wasm.<name>:PLAIN)%
// (docs/operations-records.md).
const (
	PropMCPMethod = "mcp_gateway.mcp_method" // the JSON-RPC method, or the HTTP method when no message was read
	PropMCPTool   = "mcp_gateway.mcp_tool"   // the tool of a tools/call, else empty
	PropAllow     = "mcp_gateway.allow"      // "true" or "false"
	PropReasons   = "mcp_gateway.reasons"    // comma-separated: allow-why-false when denied, allow-why-true when allowed
	PropUser      = "mcp_gateway.user"       // the user's subject ID, empty before the credential is verified
	PropRequestID = "mcp_gateway.request_id" // the proxy's request ID
)

// publish sets the decision properties of the stream. The host only reads a value
// (StreamHost), so each is handed over in place, without a copy (propValue).
func (s *stream) publish(in *policy.Input, d policy.Decision, method, tool string) {
	h, f := s.h, s.f
	h.SetProperty(PropMCPMethod, propValue(method, f.propBuf))
	h.SetProperty(PropMCPTool, propValue(tool, f.propBuf))
	allow, reasons := "false", d.AllowWhyFalse
	if d.Allow {
		allow, reasons = "true", d.AllowWhyTrue
	}
	h.SetProperty(PropAllow, propValue(allow, f.propBuf))
	f.propBuf = reasons.AppendJoined(f.propBuf[:0], ",")
	h.SetProperty(PropReasons, f.propBuf)
	h.SetProperty(PropUser, propValue(in.User, f.propBuf))
	h.SetProperty(PropRequestID, propValue(s.requestID(), f.propBuf))
}

// propValue is the bytes of value, or buf[:0] for "": the filter's buffer emptied (New
// allocates it), so that the host is never handed a nil pointer.
func propValue(value string, buf []byte) []byte {
	if value == "" {
		return buf[:0]
	}
	return unsafe.Slice(unsafe.StringData(value), len(value))
}

// refuse answers nothing itself: it counts a request refused before the policy decided (the
// counter k and the counter of reason), publishes the refusal, and records it (when the proxy
// logs info) with reason in allow-why-false. The user is known once the credential is
// verified; mcp-method is the HTTP method, as no JSON-RPC message was read.
func (s *stream) refuse(k metric, reason policy.Reason) {
	s.f.metrics.inc(k)
	s.f.metrics.incReason(reason)
	if s.route != nil {
		s.f.metrics.incRouteReason(s.route, reason)
	}
	var in policy.Input
	if s.bundle != nil {
		in = s.bundle.input
	}
	in.MCPMethod = s.httpMethod()
	d := policy.Decision{AllowWhyFalse: policy.Reasons(0).Add(reason)}
	s.publish(&in, d, in.MCPMethod, "")
	if s.h.LogLevel() <= LogInfo {
		s.logRecord(&in, d, nil, "", "")
	}
}

// httpMethod is the request's :method.
func (s *stream) httpMethod() string {
	m, _ := s.indexed(hMethod)
	return m
}
