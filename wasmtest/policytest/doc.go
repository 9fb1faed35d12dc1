// Package policytest owns the policy tester: it plays cases (an identity, a route, an MCP
// request, the expected outcome) through the real filter.wasm in the wazero host, under the
// plugin configuration the local gateway gives the filter (gateway.FilterOptions), and
// answers the filter's check calls itself with the check API's wire types and the case's
// identity (or with Tester.CheckAnswer). A case may send earlier requests first on the same
// filter (Before), give the upstream's answer (UpstreamResponse) and end with trailers. It never evaluates a policy: the decisions are the module's, and the reasons
// come from the authorization records the module writes (Explain reads them against the
// policy's structure).
//
// Load a Tester from a gateway configuration, LoadCases a cases file (docs/policy-testing.md),
// Run them, and report with WriteTable, WriteJUnit or Explain; RunFiles does all of it for
// an operator's own `go test`. The command wasmtest/cmd/policytest is a thin wrapper.
package policytest
