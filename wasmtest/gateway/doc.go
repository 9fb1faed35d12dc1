// Package gateway is the local gateway: an HTTP server that stands where Envoy stands. It runs
// every request through the real filter.wasm in the wazero host (wasmtest/host), routes the
// gateway's own paths and the authenticate host to the token service (in-process), and
// forwards everything else to the route's `to` URL, streaming the response back through the
// filter chunk by chunk so that SSE keeps flowing.
//
// It is the quick start's host (make run) and CI's (the end-to-end tests), and the host of
// development and benchmarks — never a production component: production runs the same module
// in Envoy or Istio. It lives under wasmtest/ for that reason. Bodies stream both ways through the filter (wasmtest/host's Handler); the
// from path prefix is replaced by the to path and the Host by the upstream's (Envoy's
// prefix_rewrite and auto_host_rewrite). Only plain-http loopback routes are served: TLS
// belongs to the mesh.
//
// Slow clients are bounded as on the token service's own listeners: headers within 10 s, idle
// keep-alive connections closed after 120 s, headers of at most 64 KiB. A request body must
// arrive within 30 s when it goes to the token service (its ReadTimeout) and within 5 minutes
// when it goes to an upstream; the deadline is lifted once the body is read, so responses,
// event streams included, are never cut (there is no write timeout). See Timeouts.
//
// Observability (docs/operations.md): RecordHandler prints the filter's authorization records
// as themselves rather than as the escaped message of a host log line; Live.AdminHandler
// serves the filter's metrics at /metrics in the Prometheus text format, named
// envoy_wasmcustom_<name> as Envoy names a wasm plugin's stats. Live holds the current Gateway
// behind the listeners so that a reload can replace it: a request runs to its end on the
// gateway it started on, the old gateway is retired when its requests have finished or after
// a grace period, the listen addresses cannot change, and counters keep adding up across
// gateways so that a reload never makes one go down.
package gateway
