// Package plugintest owns the filter's behaviour specification and its native runner: the
// cases (requests, the token service's answers to check calls, the upstream's answers, and
// what the client, the upstream and the log must see), the configuration they run under, and
// an in-process stand-in for the proxy. The same cases run natively against filter/plugin and
// against the compiled filter.wasm in the wazero host (wasmtest/filtertest), so the Go logic
// and the module are held to one specification.
//
// One Case type describes every case and one Result what a run observed of it. A Runner runs
// a case in a Mode (Envoy's default, or allow_on_headers_stop_iteration) on a filter of its
// own configured with Config: Native here, filtertest.Wasm for the module. RunAll runs a list
// of cases in every Mode, as subtests Case.Name/Mode.Name, and Check compares each Result
// with the case's Want.
//
// Cases live in files by the behaviour they cover: cases_routes.go (hosts and paths),
// cases_headers.go (credentials, identity, content and response headers, the Content-Type
// character set), cases_body.go (limits, JSON-RPC parsing, body smuggling, trailers),
// cases_policy.go (decisions and records), cases_tokenservice.go (check answers and the
// decision cache) and cases_binding.go (MCP session binding). Attacks sit beside the
// behaviour they attack and are marked Case.RedTeam. Scenarios returns the other cases and
// RedTeamCases the attacks; the tests that run them are TestScenarios_Native and
// TestRedTeam_Native (filter/plugin), TestScenarios_Wasm and TestRedTeam_Wasm
// (wasmtest/filtertest), so `go test -run RedTeam` selects every attack and only attacks
// among the cases.
package plugintest
