// Package gateway is the local gateway: an HTTP server that stands where Envoy stands. It runs
// every request through the real filter.wasm in the wazero host (wasmtest/host), routes the
// gateway's own paths and the authenticate host to the token service (in-process), and
// forwards everything else to the route's `to` URL, streaming the response back through the
// filter chunk by chunk so that SSE keeps flowing.
//
// It is the host for development, demos, CI and benchmarks; production runs the same module
// in Envoy or Istio. Bodies stream both ways through the filter (wasmtest/host's Handler); the
// from path prefix is replaced by the to path and the Host by the upstream's (Envoy's
// prefix_rewrite and auto_host_rewrite). Only plain-http loopback routes are served: TLS
// belongs to the mesh.
package gateway
