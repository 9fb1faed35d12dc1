// Package filtertest owns the wasm runner of the filter's behaviour cases
// (filter/plugin/plugintest): Wasm runs each case against the compiled filter.wasm in the
// wazero host, with a CheckServer that answers as the cases' token service, and
// WasmLegacyEnvoy does the same on the host of Envoy before proxy-wasm-cpp-host #533.
// TestScenarios_Wasm and TestRedTeam_Wasm (and their _WasmLegacyEnvoy twins) run every case
// this way, as filter/plugin runs them natively; the tests that need real time or concurrency
// (a slow token service, concurrent streams, the legacy-Envoy load) and the per-request
// benchmark use the same host set-up (NewHost) and request driver (Run).
package filtertest
