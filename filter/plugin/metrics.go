package plugin

// Metric names. Envoy exposes them with its stats prefix (wasm plugins: "wasmcustom.").
const (
	metricAllowed         = "mcp_gateway_authorize_allowed"
	metricDenied          = "mcp_gateway_authorize_denied"
	metricUnauthenticated = "mcp_gateway_authorize_unauthenticated"
	metricRejected        = "mcp_gateway_request_rejected"
	metricUnavailable     = "mcp_gateway_token_service_unavailable"
	metricCacheHit        = "mcp_gateway_cache_hit"
	metricCacheMiss       = "mcp_gateway_cache_miss"
	metricReasonPrefix    = "mcp_gateway_deny_reason_"
)

// metrics defines counters lazily and remembers their ids.
type metrics struct {
	host RootHost
	ids  map[string]uint32
}

func (m *metrics) inc(name string) {
	if m.ids == nil {
		m.ids = map[string]uint32{}
	}
	id, ok := m.ids[name]
	if !ok {
		var err error
		if id, err = m.host.DefineCounter(name); err != nil {
			return
		}
		m.ids[name] = id
	}
	m.host.IncrementCounter(id, 1)
}
