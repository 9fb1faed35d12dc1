// Package harness runs the software nobody on this project wrote, so that end-to-end tests can
// drive the gateway with it: a real OpenID provider (oidc-provider on Node), the Go MCP SDK's
// conformance everything-server, the MCP conformance suite, and the official TypeScript and Go
// MCP SDK clients with their OAuth flows, plus a headless Browser that completes authorization
// redirects the way a user agent would.
//
// The Node packages are pinned in wasmtest/e2e/node (package.json, package-lock.json) and
// installed by `make e2e-deps` (wasmtest/e2e/node/install.sh). The harness never installs
// anything: when the packages are missing or stale, a test that needs them fails with a
// message saying to run `make e2e-deps`. It never skips.
//
// Pieces, each usable on its own:
//
//   - [StartIdP] runs wasmtest/e2e/node/idp.mjs: an OpenID provider on 127.0.0.1 with static
//     clients and test users, automatic login and consent (or an HTML consent form), refresh
//     tokens for offline_access with rotation, and test hooks ([IdP.Disable], [IdP.Revoke],
//     [IdP.Enable], [IdP.LoginAs]) so that a refresh is refused with invalid_grant.
//   - [StartEverythingServer] builds and runs the Go SDK's conformance/everything-server
//     (stateful streamable HTTP) on a free loopback port.
//   - [RunConformance] runs the MCP conformance server suite against a URL, with a bearer token
//     added to every request by wasmtest/e2e/node/auth-preload.mjs.
//   - [Browser] follows redirects with a cookie jar, stops at a redirect URI prefix and submits
//     HTML forms (consent screens).
//   - [RunTSClient] runs wasmtest/e2e/node/ts-client.mjs, the TypeScript SDK client flow
//     (401, protected resource metadata, authorization server metadata, registration,
//     authorization with PKCE, token, tools/list, tools/call, refresh, tools/call);
//     [RunGoClient] does the same in-process with the Go SDK's auth.AuthorizationCodeHandler.
//     Both report a [ClientResult].
//
// Everything listens on 127.0.0.1 only. Processes started by the harness are stopped when the
// test that started them ends, and their stderr is logged if the test failed.
//
// Cookies are kept per host, not per port (RFC 6265), as in a real browser: an IdP and a
// gateway on 127.0.0.1 share one cookie jar in a [Browser].
package harness
