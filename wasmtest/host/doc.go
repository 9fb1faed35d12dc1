// Package host is a proxy-wasm (ABI 0.2.1) host on wazero that behaves like Envoy's Wasm
// host, proxy-wasm-cpp-host. Tests, the local gateway and the benchmarks use it to run the
// real filter.wasm.
package host
