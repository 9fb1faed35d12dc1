package plugin

import (
	"strings"

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
		if id, err = m.host.DefineCounter(metricReasonPrefix + strings.ReplaceAll(r.String(), "-", "_")); err != nil {
			return
		}
		if m.reasons == nil {
			m.reasons = map[policy.Reason]uint32{}
		}
		m.reasons[r] = id
	}
	m.host.IncrementCounter(id, 1)
}
