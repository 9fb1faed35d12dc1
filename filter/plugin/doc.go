// Package plugin is the filter's per-request logic, independent of the proxy-wasm ABI:
// route matching, the request headers it reads (indexed once per request, reqheaders.go),
// bearer extraction, body limits and JSON-RPC parsing, the decision-bundle callout and its
// cache, the MCP request-header check (mcpheaders.go), policy evaluation, the answers to
// denials (denials.go: a denied tool call as an isError result, every batch element
// answered), header rewriting and the authorization log.
//
// The ABI layer (filter/internal/abi) implements RootHost and StreamHost with proxy-wasm
// host calls; tests implement them natively, so the same scenarios run with and without wasm.
package plugin
