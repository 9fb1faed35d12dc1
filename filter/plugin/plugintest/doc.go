// Package plugintest holds the filter's behaviour scenarios: requests, the token service's
// answers to check calls, and what the client, the upstream and the log must see. The same
// scenarios run natively against filter/plugin (a fake host in this package) and against the
// compiled filter.wasm in the wazero host (wasmtest), so the Go logic and the module are held
// to one specification.
package plugintest
