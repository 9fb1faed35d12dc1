// Package obs is the token service's observability: Prometheus metrics, OpenTelemetry
// tracing, and the decorators that feed them.
//
// Contracts:
//
//   - Metrics registers every collector on its own prometheus.Registry (never the global
//     default). One Metrics lives for the process; servers that replace one another on a
//     reload share it, so counters never reset on reload. Names are mcp_gateway_tokensvc_*
//     (docs/operations-tokensvc.md lists them).
//   - HTTP labels requests by the chi route pattern that matched, never the raw path;
//     every 404 and 421 answer (no route matched, unknown host) is labelled Unmatched. Methods outside the
//     standard set are labelled OTHER. So no client can create series.
//   - Store and Connector decorate store.Store and idp.Connector without changing their
//     behaviour: results and errors pass through untouched. Store counts as failures only
//     errors other than the store's sentinel answers (ErrNotFound, ErrAlreadyExists,
//     ErrRefreshReused, ErrConflict) and context cancellation.
//   - The live-sessions gauge is computed on each scrape by SessionCounter (a count query
//     bounded by a 2 s timeout; every backend implements it), not tracked: it counts all
//     replicas' sessions, and is absent when no counter is set.
//   - Tracing is off unless the environment asks for it (TracingEnabled); a nil tracer
//     means no spans. The incoming W3C traceparent is extracted with the TraceContext
//     propagator (a per-middleware value, not the global propagator), so the filter's check
//     call joins the caller's trace. Span names carry the route pattern; no span carries a
//     query, header, cookie or token.
package obs
