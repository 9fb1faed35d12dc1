// Package floor holds measuring instruments for issue 17, never shipped: four proxy-wasm
// (ABI 0.2.1) reactor modules in standard Go that do the least work a filter of their kind
// must do, so that the filter's own cost can be told apart from what the Go toolchain's wasip1
// code, the ABI and the host cost for any such filter (BENCHMARKS.md, "The floor").
//
//   - floor/none: no callback exported (the ABI marker and the allocator only): what the host
//     and the benchmark's driver cost per stream by themselves.
//   - floor/empty: every callback returns at once (Continue, true); no host calls.
//   - floor/reads: also reads what a body-inspecting filter must read — the request headers
//     once, the request body at the end of the stream, the response headers once — and sets
//     one property. No parsing.
//   - floor/mcp: reads, plus the least MCP work: the body validated as JSON-RPC with its
//     method and params.name read (filter/jsonrpc, the filter's own reader), the bearer token
//     taken from the headers, one map lookup of its keyed hash (a cached decision), the tool
//     checked against the decision's allow set, and the six properties the filter publishes
//     on an allowed call set.
//
// Each is built like filter.wasm (`GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared
// -trimpath -ldflags='-s -w'`; wasmtest/wasmbuild.FloorModule) and driven like it
// (BenchmarkFloor_Wasm and TestFloorModules in wasmtest/filtertest). This package holds what
// the mcp module does per request without the ABI (Cache, BearerToken, ReadCall,
// HeaderValue), so that BenchmarkFloorLogic measures that logic alone natively, under V8
// (node:wasi) and under wazero, as `make bench` measures the plugin's. The ABI glue the
// modules share is in floor/internal/guest; none of it is the filter's (filter/internal/abi).
//
// The mcp module is a floor, not a filter: it keys its cache with hash/maphash (64 bits,
// cheaper than the filter's SipHash-2-4-128, and not collision-proof between users), fills
// the cache with a stand-in decision for any token it has not seen instead of calling the
// token service, and neither matches routes, rewrites headers nor writes records.
package floor
