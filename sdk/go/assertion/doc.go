// Package assertion verifies the gateway's identity assertion, the X-Gateway-Assertion JWT
// an MCP server (or an mcp.client application) receives behind the gateway, and returns the
// identity it carries.
//
// The contract (docs/sdk-go.md, docs/token-service.md):
//
//   - The assertion is a compact JWS of at most [MaxAssertionSize] bytes whose protected
//     header has alg ES256 (nothing else is accepted: not none, not HS256, not RS256), a kid,
//     no crit, and no duplicated member.
//   - The kid names a key of the gateway's JWKS (GET /.well-known/gateway/jwks.json on any
//     route host). The set is fetched on first use and kept for the Cache-Control max-age of
//     its response (default [DefaultCacheTTL], at most [MaxCacheTTL]). An unknown kid
//     refetches it at most once per [MinRefreshInterval]; a kid still unknown is refused. A set
//     that cannot be fetched fails closed: nothing verifies until it can.
//   - The claims: iss equals the configured issuer (the gateway's authenticate_service_url),
//     aud is the receiving host, exp is in the future, iat and (when present) nbf are not, each
//     within [Config.Leeway] (default [DefaultLeeway]); sub is a non-empty string, email and
//     name strings, groups a list of strings.
//
// Every refusal is an [*Error] whose [Reason] says which rule failed. [Middleware] answers
// 401 to a request without exactly one valid X-Gateway-Assertion header and otherwise puts
// the [Identity] in the request's context ([FromContext]).
//
// The package uses only the standard library, so an MCP server can import it without the
// token service's dependencies. Package mcpauth connects it to the official MCP Go SDK.
package assertion
