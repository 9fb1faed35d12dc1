// Package gatewaytest holds the end-to-end tests of the whole gateway: a real OpenID provider
// (oidc-provider), the MCP Go SDK's conformance everything-server as the MCP server, the token
// service, and filter.wasm in the wazero host behind the local gateway — driven by the official
// MCP clients (TypeScript and Go SDKs), a headless browser and the MCP conformance suite.
//
// It needs the Node packages of wasmtest/e2e/node (make e2e-deps).
package gatewaytest
