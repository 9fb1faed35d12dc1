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
// definition changed is refused once a VM has seen the changed definition in a list: the VM
// marks the tool in the proxy's shared data (every VM, on every worker thread, reads it) and
// in its own memory (up to maxChangedTools names per route, should the proxy refuse shared
// data); a list showing the pinned definition again clears both.

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
		if s.route.changed[name] || s.sharedChanged(name) {
			delete(s.route.changed, name)
			s.h.SetSharedData(changedKey(s.route, name), nil, 0)
		}
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
		// Every VM (every Envoy worker) refuses its calls from now on, not only this one.
		s.h.SetSharedData(changedKey(s.route, name), []byte{1}, 0)
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
	return s.route.changed[tool] || s.sharedChanged(tool)
}

// changedKey is the shared-data key that marks a pinned tool of route r as changed. Only
// tools named in the lock get one, so the server cannot grow the proxy's shared data.
func changedKey(r *route, tool string) string {
	return "mcp-gateway/tool-changed/" + r.ID + "\x00" + tool
}

// sharedChanged reports whether some VM marked the pinned tool as changed.
func (s *stream) sharedChanged(tool string) bool {
	v, _, ok := s.h.SharedData(changedKey(s.route, tool))
	return ok && len(v) == 1 && v[0] == 1
}

// applyPins turns an allowed tools/call of a tool the lock refuses into a denial with the
// reason mcp-tool-definition-changed.
func (s *stream) applyPins(d policy.Decision, method, tool string) policy.Decision {
	if !d.Allow || method != policy.MethodToolsCall || !s.pinDenies(tool) {
		return d
	}
	return policy.Decision{AllowWhyTrue: d.AllowWhyTrue, AllowWhyFalse: policy.Reasons(0).Add(policy.ReasonMCPToolDefinitionChanged), DenyWhyFalse: d.DenyWhyFalse}
}
