package plugin

import (
	"strings"

	"github.com/mcpmesh/gateway/shared/pluginconf"
	"github.com/mcpmesh/gateway/shared/policy"
)

// metric is a counter with a fixed name. Counters are defined on first use and their ids
// kept in an array: the request path increments two or three per request, and in the wasm
// build a map lookup by name costs more than the increment itself.
type metric int

// Counters. Envoy exposes them with its stats prefix (wasm plugins: "wasmcustom.").
const (
	metricAllowed metric = iota
	metricDenied
	metricUnauthenticated
	metricRejected
	metricUnavailable
	metricCacheHit
	metricCacheMiss
	metricCheckShed
	metricToolsListFiltered
	metricToolsListRefused
	metricShadowWouldDeny
	metricShadowWouldAllow
	metricToolDefinitionChanged
	numMetrics
)

var metricNames = [numMetrics]string{
	metricAllowed:         "mcp_gateway_authorize_allowed",
	metricDenied:          "mcp_gateway_authorize_denied",
	metricUnauthenticated: "mcp_gateway_authorize_unauthenticated",
	metricRejected:        "mcp_gateway_request_rejected",
	metricUnavailable:     "mcp_gateway_token_service_unavailable",
	metricCacheHit:        "mcp_gateway_cache_hit",
	metricCacheMiss:       "mcp_gateway_cache_miss",
	metricCheckShed:       "mcp_gateway_check_shed",
	// toollist.go
	metricToolsListFiltered: "mcp_gateway_tools_list_filtered",
	metricToolsListRefused:  "mcp_gateway_tools_list_refused",
	// shadow.go
	metricShadowWouldDeny:  "mcp_gateway_shadow_would_deny",
	metricShadowWouldAllow: "mcp_gateway_shadow_would_allow",
	// pins.go
	metricToolDefinitionChanged: "mcp_gateway_tool_definition_changed",
}

// metricReasonPrefix starts the name of the counter of each deny reason
// (mcp_gateway_deny_reason_mcp_tool_unauthorized).
const metricReasonPrefix = "mcp_gateway_deny_reason_"

// metrics defines counters lazily and remembers their ids.
type metrics struct {
	host    RootHost
	ids     [numMetrics]uint32
	defined [numMetrics]bool
	reasons map[policy.Reason]uint32 // counters of deny reasons, by reason
}

// inc adds one to counter k, defining it first if needed. A counter the host refuses to
// define is skipped (and tried again next time): a metric never changes how a request is
// handled.
func (m *metrics) inc(k metric) {
	if !m.defined[k] {
		id, err := m.host.DefineCounter(metricNames[k])
		if err != nil {
			return
		}
		m.ids[k], m.defined[k] = id, true
	}
	m.host.IncrementCounter(m.ids[k], 1)
}

// incReason adds one to the counter of deny reason r.
func (m *metrics) incReason(r policy.Reason) {
	id, ok := m.reasons[r]
	if !ok {
		var err error
		if id, err = m.host.DefineCounter(metricReasonPrefix + replaceByte(r.String(), '-', '_')); err != nil {
			return
		}
		if m.reasons == nil {
			m.reasons = map[policy.Reason]uint32{}
		}
		m.reasons[r] = id
	}
	m.host.IncrementCounter(id, 1)
}

// Per-route counters, named so that Envoy's tag extraction (stats_config.stats_tags) can turn
// the route and the reason into tags (docs/operations-records.md):
//
//	mcp_gateway.route.<route>.authorize_allowed
//	mcp_gateway.route.<route>.authorize_denied
//	mcp_gateway.route.<route>.deny_reason.<reason>
//
// <route> is the route's name (or its host and path) in lower case with every character but
// a-z, 0-9 and _ replaced by _, so that it holds no dot; <reason> is the reason with _ for -.
const metricRoutePrefix = "mcp_gateway.route."

// routeStats are the counters of one route, defined on first use.
type routeStats struct {
	prefix                string // metricRoutePrefix + the route's stat name + "."
	allowed, denied       uint32
	hasAllowed, hasDenied bool
	reasons               map[policy.Reason]uint32
	named                 map[string]uint32 // other counters of the route, by suffix
}

// routeStatPrefix returns the counter name prefix of route r.
func routeStatPrefix(r *pluginconf.Route) string {
	name := r.Name
	if name == "" {
		name = r.Host + r.PathPrefix
	}
	b := []byte(strings.ToLower(name))
	for i, c := range b {
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_') {
			b[i] = '_'
		}
	}
	return metricRoutePrefix + string(b) + "."
}

// incRoute adds one to the allowed or denied counter of route r.
func (m *metrics) incRoute(r *route, allowed bool) {
	st := &r.stats
	id, has, suffix := &st.denied, &st.hasDenied, "authorize_denied"
	if allowed {
		id, has, suffix = &st.allowed, &st.hasAllowed, "authorize_allowed"
	}
	if !*has {
		v, err := m.host.DefineCounter(st.prefix + suffix)
		if err != nil {
			return
		}
		*id, *has = v, true
	}
	m.host.IncrementCounter(*id, 1)
}

// incRouteReason adds one to the counter of deny reason reason on route r.
func (m *metrics) incRouteReason(r *route, reason policy.Reason) {
	st := &r.stats
	id, ok := st.reasons[reason]
	if !ok {
		var err error
		if id, err = m.host.DefineCounter(st.prefix + "deny_reason." + replaceByte(reason.String(), '-', '_')); err != nil {
			return
		}
		if st.reasons == nil {
			st.reasons = map[policy.Reason]uint32{}
		}
		st.reasons[reason] = id
	}
	m.host.IncrementCounter(id, 1)
}

// replaceByte returns s with every byte old replaced by new, as strings.ReplaceAll does for
// one-byte strings (strings.Replace costs the module 5 KB).
func replaceByte(s string, old, new byte) string {
	if strings.IndexByte(s, old) < 0 {
		return s
	}
	b := []byte(s)
	for i, c := range b {
		if c == old {
			b[i] = new
		}
	}
	return string(b)
}
