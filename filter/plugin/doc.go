// Package plugin is the filter's per-request logic, independent of the proxy-wasm ABI:
// route matching, bearer extraction, body limits and JSON-RPC parsing, the decision-bundle
// callout and its cache, policy evaluation, header rewriting and the authorization log.
//
// The ABI layer (filter/internal/abi) implements RootHost and StreamHost with proxy-wasm
// host calls; tests implement them natively, so the same scenarios run with and without wasm.
package plugin
