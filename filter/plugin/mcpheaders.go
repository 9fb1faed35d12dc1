package plugin

import (
	"github.com/mcpmesh/gateway/filter/jsonrpc"
	"github.com/mcpmesh/gateway/shared/policy"
)

// Request metadata headers of MCP's Streamable HTTP transport (lower-case, as the proxy
// hands them over).
const (
	headerProtocolVersion = "mcp-protocol-version"
	headerMCPMethod       = "mcp-method"
	headerMCPName         = "mcp-name"
)

// mcpHeaders collects the request metadata headers. A spelling with underscores counts as
// another copy of the header: upstreams that map "_" to "-" (CGI, WSGI) would read it as one.
func (s *stream) mcpHeaders() jsonrpc.MCPHeaders {
	var h jsonrpc.MCPHeaders
	if !s.idx.mcpMeta {
		return h // no header whose name could be one of them
	}
	for i := range s.hdrs {
		name := s.hdrs[i].Name
		if len(name) < len("mcp-name") || name[0] != 'm' || name[1] != 'c' || name[2] != 'p' {
			continue
		}
		v := trimOWS(s.hdrs[i].Value)
		switch {
		case name == headerProtocolVersion || isUnderscoreSpelling(name, headerProtocolVersion):
			h.ProtocolVersion, h.NProtocolVersion = v, h.NProtocolVersion+1
		case name == headerMCPMethod || isUnderscoreSpelling(name, headerMCPMethod):
			h.Method, h.NMethod = v, h.NMethod+1
		case name == headerMCPName || isUnderscoreSpelling(name, headerMCPName):
			h.Name, h.NName = v, h.NName+1
		}
	}
	return h
}

// checkMCPHeaders checks the request metadata headers against the body before the policy
// reads it (jsonrpc.CheckHeaders): nothing behind the gateway that routes, limits or logs on
// Mcp-Method or Mcp-Name may be told another method or tool than the one policy decided on.
// A request that fails is refused with 400 and JSON-RPC error -32020 (HeaderMismatch), and
// recorded with the reason mcp-header-mismatch. It sets s.mcpVersion.
func (s *stream) checkMCPHeaders() bool {
	if !s.idx.mcpMeta && (s.batch || len(s.messages) == 0 || s.messages[0].Meta == "") {
		// No metadata header and no _meta to check one against: CheckHeaders has nothing to
		// refuse and no version to give (TestCheckHeaders_NothingToCheckWithoutHeadersOrMeta
		// holds it to that), and the calls cost more than this test in the wasm filter.
		s.mcpVersion = ""
		return true
	}
	h := s.mcpHeaders()
	version, problem := jsonrpc.CheckHeaders(&h, &jsonrpc.Batch{Array: s.batch, Messages: s.messages})
	s.mcpVersion = version
	if problem == "" {
		return true
	}
	s.refuse(metricRejected, policy.ReasonMCPHeaderMismatch)
	id := ""
	if !s.batch && len(s.messages) == 1 {
		id = s.messages[0].ID
	}
	s.replyJSONRPCError(400, jsonrpc.AppendErrorResponse(nil, id, jsonrpc.CodeHeaderMismatch, "Header mismatch: "+problem, s.requestID()))
	return false
}
