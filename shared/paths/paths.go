// Package paths names the gateway's own HTTP paths: the contract between the proxy's route
// configuration (Istio, Envoy, the local gateway), the filter (which leaves them alone) and the
// token service (which serves them).
package paths

import "strings"

// Paths served on every route host by the token service's public listener.
const (
	// Prefix is the prefix of every gateway endpoint on a route host.
	Prefix = "/.gateway/"

	// AuthorizationServerMetadata is RFC 8414 metadata; the issuer is the route host's origin.
	AuthorizationServerMetadata = "/.well-known/oauth-authorization-server"
	// OpenIDConfiguration is OpenID Connect discovery, which MCP clients try beside RFC 8414;
	// it serves the same authorization server metadata (docs/clients.md "Discovery").
	OpenIDConfiguration = "/.well-known/openid-configuration"
	// ProtectedResourceMetadata is the RFC 9728 prefix; the MCP path follows it.
	ProtectedResourceMetadata = "/.well-known/oauth-protected-resource"
	// JWKS publishes the keys that sign X-Gateway-Assertion.
	JWKS = "/.well-known/gateway/jwks.json"

	// Authorize, Token, Register and Revoke are the MCP authorization server's endpoints.
	Authorize = "/.gateway/mcp/authorize"
	Token     = "/.gateway/mcp/token"
	Register  = "/.gateway/mcp/register"
	Revoke    = "/.gateway/mcp/revoke"
	// Consent receives the consent form.
	Consent = "/.gateway/mcp/consent"

	// Routes lists MCP servers (docs/token-service.md), on mcp.client hosts.
	Routes = "/.gateway/mcp/routes"
	// Connect starts upstream OAuth (docs/token-service.md), on mcp.server hosts.
	Connect = "/.gateway/mcp/connect"
	// UpstreamCallback is the redirect URI operators register at an upstream OAuth provider.
	UpstreamCallback = "/.gateway/mcp/oauth2/callback"
	// UpstreamClientMetadata is the client ID metadata document the gateway serves on a host
	// with upstream_discovery routes: its URL is the gateway's client_id at upstream
	// authorization servers that support such documents (docs/upstream-discovery.md).
	UpstreamClientMetadata = "/.gateway/mcp/oauth2/client.json"
	// Disconnect removes the user's Internal Tokens (docs/pattern-2-upstream-oauth.md), on
	// mcp.server hosts: GET shows a confirmation form, its POST disconnects.
	Disconnect = "/.gateway/mcp/disconnect"

	// SignIn starts browser sign-in for the route host; Handoff completes the cross-host
	// hand-over of a session from the authenticate host; SignOut ends the session.
	SignIn  = "/.gateway/sign_in"
	Handoff = "/.gateway/callback"
	SignOut = "/.gateway/sign_out"
)

// Paths on the authenticate service host (authenticate_service_url).
const (
	// IDPCallback is the redirect URI operators register at the identity provider.
	IDPCallback = "/oauth2/callback"
	// AuthenticateSignIn starts sign-in at the identity provider.
	AuthenticateSignIn = "/.gateway/authenticate/sign_in"
)

// Paths on the token service's internal listener (never routed publicly).
const (
	// Check is the filter's check API.
	Check = "/.internal/check"
	// Health answers liveness probes on both listeners.
	Health = "/healthz"
	// Ready answers readiness probes on both listeners: 200 once the store answers and the
	// identity provider's discovery has succeeded, else 503.
	Ready = "/readyz"
	// Metrics serves the token service's Prometheus metrics (internal listener only).
	Metrics = "/metrics"
)

// IsGateway reports whether path on a route host belongs to the token service rather than to
// the route's upstream. path must be the request path without query.
func IsGateway(path string) bool {
	switch {
	case strings.HasPrefix(path, Prefix):
		return true
	case path == AuthorizationServerMetadata, strings.HasPrefix(path, AuthorizationServerMetadata+"/"):
		return true
	case path == OpenIDConfiguration, strings.HasPrefix(path, OpenIDConfiguration+"/"):
		return true
	case path == ProtectedResourceMetadata, strings.HasPrefix(path, ProtectedResourceMetadata+"/"):
		return true
	case path == JWKS:
		return true
	}
	return false
}
