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

// publish sets the decision properties of the stream. It reuses the filter's buffer: the
// proxy copies each value.
func (s *stream) publish(in *policy.Input, d policy.Decision, method, tool string) {
	s.setProperty(PropMCPMethod, method)
	s.setProperty(PropMCPTool, tool)
	allow, reasons := "false", d.AllowWhyFalse
	if d.Allow {
		allow, reasons = "true", d.AllowWhyTrue
	}
	s.setProperty(PropAllow, allow)
	f := s.f
	f.propBuf = reasons.AppendJoined(f.propBuf[:0], ',')
	s.h.SetProperty(PropReasons, f.propBuf)
	s.setProperty(PropUser, in.User)
	s.setProperty(PropRequestID, s.requestID())
}

// setProperty publishes value under path. The host only reads the value (StreamHost), so
// a non-empty one is handed over in place rather than copied into the filter's buffer.
func (s *stream) setProperty(path, value string) {
	if value == "" {
		s.setEmptyProperty(path)
		return
	}
	s.h.SetProperty(path, unsafe.Slice(unsafe.StringData(value), len(value)))
}

// setEmptyProperty publishes an empty value as the filter's buffer emptied, so that the host
// is not handed a nil pointer.
func (s *stream) setEmptyProperty(path string) {
	if s.f.propBuf == nil {
		s.f.propBuf = make([]byte, 0, 64)
	}
	s.h.SetProperty(path, s.f.propBuf[:0])
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
