package plugin

import (
	"github.com/mcpmesh/gateway/shared/policy"
	"github.com/mcpmesh/gateway/shared/tooldigest"
)

// Pinned tool definitions (docs/tool-pinning.md): a route's mcp.server.tool_lock gives the
// digest of every tool its server may list. A listed tool whose digest differs, or that is not
// in the lock, is changed: in enforce mode it is removed from the list and its calls are
// refused with mcp-tool-definition-changed; in warn mode both are only logged and counted
// (mcp_gateway_tool_definition_changed).
//
// A call of a tool the lock does not name is refused at once. A call of a pinned tool whose
// definition changed is refused once this VM has seen the changed definition in a list; the
// VM remembers up to maxChangedTools such names per route (a list showing the pinned
// definition again clears one).

// maxChangedTools bounds the changed tool names a VM remembers per route.
const maxChangedTools = 1024

// pinnedTool reports whether the tool raw named name, listed by the server of s's route,
// matches the route's lock, logging and counting it when not. It is always true on a route
// without a lock.
func (s *stream) pinnedTool(name, raw string) bool {
	pins := s.route.ToolPins
	if pins == nil {
		return true
	}
	want, pinned := pins.Digests[name]
	got, err := tooldigest.Digest([]byte(raw))
	if pinned && err == nil && got == want {
		delete(s.route.changed, name)
		return true
	}
	why := "its definition changed"
	if !pinned {
		why = "it is not in the lock file"
	}
	s.f.metrics.inc(metricToolDefinitionChanged)
	s.f.metrics.incRouteNamed(s.route, "tool_definition_changed")
	action := "hidden and refused"
	if pins.Warn {
		action = "warn mode: still listed"
	} else if pinned {
		if s.route.changed == nil {
			s.route.changed = map[string]bool{}
		}
		if len(s.route.changed) < maxChangedTools {
			s.route.changed[name] = true
		}
	}
	s.h.Log(LogWarn, "mcp-gateway: tool "+quote(name)+" of route "+s.route.ID+" does not match the lock file: "+why+" ("+action+"; request "+s.requestID()+")")
	return pins.Warn
}

// pinDenies reports whether the route's lock refuses a tools/call of tool (enforce mode: the
// tool is not in the lock, or this VM saw its definition changed).
func (s *stream) pinDenies(tool string) bool {
	pins := s.route.ToolPins
	if pins == nil || pins.Warn {
		return false
	}
	if _, ok := pins.Digests[tool]; !ok {
		return true
	}
	return s.route.changed[tool]
}

// applyPins turns an allowed tools/call of a tool the lock refuses into a denial with the
// reason mcp-tool-definition-changed.
func (s *stream) applyPins(d policy.Decision, method, tool string) policy.Decision {
	if !d.Allow || method != policy.MethodToolsCall || !s.pinDenies(tool) {
		return d
	}
	return policy.Decision{AllowWhyTrue: d.AllowWhyTrue, AllowWhyFalse: policy.Reasons(0).Add(policy.ReasonMCPToolDefinitionChanged), DenyWhyFalse: d.DenyWhyFalse}
}
