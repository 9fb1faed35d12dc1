// Package filtertest owns the wasm runner of the filter's behaviour cases
// (filter/plugin/plugintest): Wasm runs each case against the compiled filter.wasm in the
// wazero host, with a CheckServer that answers as the cases' token service. TestScenarios_Wasm
// and TestRedTeam_Wasm run every case this way, as filter/plugin runs them natively; the
// tests that need real time or concurrency (a slow token service, concurrent streams) and the
// per-request benchmark use the same host set-up (NewHost) and request driver (Run).
package filtertest
