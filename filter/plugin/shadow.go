package plugin

import "github.com/mcpmesh/gateway/shared/policy"

// Shadow policies (docs/policy.md, "Shadow policies"). A route's policy_shadow is evaluated
// beside its policy on every message the policy decides on, with the same input; its
// decision goes into the authorization record (shadow-allow and its reasons) and, when it
// disagrees with the enforced one, into the counters
//
//	mcp_gateway_shadow_would_deny   the policy allowed, the shadow would have denied
//	mcp_gateway_shadow_would_allow  the policy denied, the shadow would have allowed
//	mcp_gateway.route.<route>.shadow_would_deny / .shadow_would_allow
//
// It never changes what happens to the request.

// evaluateShadow evaluates the route's shadow policy on in, counts a disagreement with the
// enforced decision d, and returns the shadow decision (nil when the route has none).
func (s *stream) evaluateShadow(in *policy.Input, d policy.Decision) *policy.Decision {
	if s.route.shadow == nil {
		return nil
	}
	sd := s.route.shadow.Evaluate(in)
	switch {
	case d.Allow && !sd.Allow:
		s.f.metrics.inc(metricShadowWouldDeny)
		s.f.metrics.incRouteNamed(s.route, "shadow_would_deny")
	case !d.Allow && sd.Allow:
		s.f.metrics.inc(metricShadowWouldAllow)
		s.f.metrics.incRouteNamed(s.route, "shadow_would_allow")
	}
	return &sd
}

// incRouteNamed adds one to the route's counter mcp_gateway.route.<route>.<suffix>.
func (m *metrics) incRouteNamed(r *route, suffix string) {
	st := &r.stats
	id, ok := st.named[suffix]
	if !ok {
		var err error
		if id, err = m.host.DefineCounter(st.prefix + suffix); err != nil {
			return
		}
		if st.named == nil {
			st.named = map[string]uint32{}
		}
		st.named[suffix] = id
	}
	m.host.IncrementCounter(id, 1)
}
