package plugin

import (
	"strconv"
	"unsafe"

	"github.com/mcpmesh/gateway/filter/jsonrpc"
	"github.com/mcpmesh/gateway/shared/authlog"
	"github.com/mcpmesh/gateway/shared/checkapi"
	"github.com/mcpmesh/gateway/shared/pluginconf"
	"github.com/mcpmesh/gateway/shared/policy"
)

// decide evaluates the route policy for every message of the request with the verified
// identity, logs one authorization record per message (when the proxy logs info), and
// answers 403 unless all are allowed (a batch is allowed only if every element is).
func (s *stream) decide() bool {
	if s.route.Kind == pluginconf.KindServer && len(s.messages) > 0 && !s.checkMCPHeaders() {
		return false
	}
	in := s.bundle.input
	// Records are logged at info. Building one is a good part of a decision's cost in the
	// wasm build, so it is skipped when the proxy would drop it (Istio's default level is
	// warning).
	logRecords := s.h.LogLevel() <= LogInfo
	// The published decision is that of the first denied message, or of the last one.
	var pub policy.Decision
	pubMethod, pubTool := "", ""
	if len(s.messages) == 0 {
		// No JSON-RPC message (the event-stream GET, the session DELETE, client and plain
		// routes): the record names the HTTP method.
		pubMethod = s.httpMethod()
		pub = s.check(&in, pubMethod, "", "", logRecords)
	}
	allowed := true
	// decisions holds each message's decision once one is denied (denials.go answers each).
	var decisions []policy.Decision
	for i := range s.messages {
		m := &s.messages[i]
		tool, args := "", ""
		if m.Method == policy.MethodToolsCall {
			tool, args = m.Tool, m.Arguments
		}
		if logRecords {
			s.client = jsonrpc.ReadClient(m)
			if s.client.ProtocolVersion == "" {
				s.client.ProtocolVersion = s.mcpVersion
			}
		}
		d := s.check(&in, m.Method, tool, args, logRecords)
		if allowed {
			pub, pubMethod, pubTool = d, m.Method, tool
		}
		if !d.Allow && decisions == nil {
			decisions = make([]policy.Decision, len(s.messages))
			for j := range i {
				decisions[j].Allow = true
			}
		}
		if decisions != nil {
			decisions[i] = d
		}
		allowed = allowed && d.Allow
	}
	allowed = allowed && pub.Allow
	s.publish(&in, pub, pubMethod, pubTool)
	if !allowed {
		s.f.metrics.inc(metricDenied)
		s.f.metrics.incRoute(s.route, false)
		s.replyDenied(decisions)
		return false
	}
	s.f.metrics.inc(metricAllowed)
	s.f.metrics.incRoute(s.route, true)
	s.watchToolLists()
	return true
}

// rewriteHeaders prepares the request headers for the upstream (docs/architecture.md, rule 5): the signed
// assertion; on MCP server routes the External Token never goes on — it is replaced by the
// Internal Token on upstream_oauth2 routes and removed otherwise; mcp.client backends get the
// External Token of the browser session; the session cookie is never forwarded.
func (s *stream) rewriteHeaders(b *bundle) bool {
	switch s.route.Kind {
	case pluginconf.KindServer:
		s.stripSessionCookie()
		s.stripAcceptEncoding()
		if s.route.UpstreamOAuth2 {
			if b.upstreamToken == "" {
				s.replyUpstreamRequired()
				return false
			}
			s.h.SetRequestHeader("authorization", "Bearer "+b.upstreamToken)
		} else {
			s.h.RemoveRequestHeader("authorization")
		}
		for _, name := range s.sessionAliases {
			s.h.RemoveRequestHeader(name)
		}
		if s.upstreamSession != "" {
			s.h.SetRequestHeader(sessionHeader, s.upstreamSession)
		}
		if s.upstreamPath != "" {
			s.h.SetRequestHeader(":path", s.upstreamPath)
		}
	case pluginconf.KindClient:
		s.stripSessionCookie()
		if b.clientToken == "" {
			s.h.RemoveRequestHeader("authorization")
		} else {
			s.h.SetRequestHeader("authorization", "Bearer "+b.clientToken)
		}
	default:
		s.stripSessionCookie()
	}
	s.h.SetRequestHeader(checkapi.AssertionHeader, b.assertion)
	return true
}

// check evaluates one message and, if logRecord is set, logs its authorization record.
func (s *stream) check(in *policy.Input, method, tool, args string, logRecord bool) policy.Decision {
	in.MCPMethod, in.MCPTool = method, tool
	d := s.route.policy.Evaluate(in)
	// The two calls below do nothing without a shadow policy or a lock (most routes): a
	// call costs more than the test in the wasm filter.
	var shadow *policy.Decision
	if s.route.shadow != nil {
		shadow = s.evaluateShadow(in, d)
	}
	if s.route.ToolPins != nil {
		d = s.applyPins(d, method, tool)
	}
	if logRecord {
		s.logRecord(in, d, shadow, tool, args)
	}
	if !d.Allow {
		for r := range d.AllowWhyFalse.All() {
			s.f.metrics.incReason(r)
			s.f.metrics.incRouteReason(s.route, r)
		}
	}
	return d
}

// logRecord logs the authorization record of one decision at info level.
func (s *stream) logRecord(in *policy.Input, d policy.Decision, shadow *policy.Decision, tool, args string) {
	rec := authlog.Record{
		Time:              s.h.Now(),
		RequestID:         s.requestID(),
		User:              in.User,
		Email:             in.Email,
		ClientID:          in.ClientID,
		Decision:          d,
		MCPMethod:         in.MCPMethod,
		MCPTool:           tool,
		MCPToolParameters: args,
		// jsonrpc.Parse validated the whole body, and args is one object member of it.
		MCPToolParametersValidated: true,
		MCPProtocolVersion:         s.client.ProtocolVersion,
		MCPClientName:              s.client.Name,
		MCPClientVersion:           s.client.Version,
		Shadow:                     shadow,
	}
	f := s.f
	f.logBuf = f.logWriter.Append(f.logBuf[:0], &rec)
	// The record is handed over without a copy: Log does not keep msg (RootHost), and the
	// buffer is only written again by the next record. A copy of the ~1 KiB line was a fifth
	// of the record's cost in the wasm filter (BENCHMARKS.md, "The authorization record").
	f.host.Log(LogInfo, unsafe.String(unsafe.SliceData(f.logBuf), len(f.logBuf)))
}

// quote returns strconv.Quote(s). Tool names are nearly always printable ASCII without quotes
// or backslashes, which Quote leaves as they are; those skip its per-rune work, which is
// costly in the wasm filter.
func quote(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' || c > '~' || c == '"' || c == '\\' {
			return strconv.Quote(s)
		}
	}
	return `"` + s + `"`
}
