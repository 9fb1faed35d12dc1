// Package gateway is the local gateway: an HTTP server that stands where Envoy stands. It runs
// every request through the real filter.wasm in the wazero host (wasmtest/host), routes the
// gateway's own paths and the authenticate host to the token service (in-process), and
// forwards everything else to the route's `to` URL, streaming the response back through the
// filter chunk by chunk so that SSE keeps flowing.
//
// It is the host for development, demos, CI and benchmarks; production runs the same module
// in Envoy or Istio. Differences from Envoy, on purpose: the request body the filter released
// is collected before the upstream request starts (Envoy streams it), and only plain-http
// loopback routes are served (TLS belongs to the mesh).
package gateway
