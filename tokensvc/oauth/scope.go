package oauth

import (
	"slices"
	"strings"

	"github.com/mcpmesh/gateway/tokensvc/store"
)

// Scopes (docs/clients.md "Scopes"). The gateway has one scope, mcp: access to the MCP servers
// a token is bound to, as far as the route's policy allows. The protected resource metadata
// advertises only it (scopes_supported) and the filter's 401 challenge names it
// (scope="mcp"), so a client that follows the MCP scope-selection rules asks for exactly it.
// The authorization server metadata also lists offline_access, which a client may ask for to
// say it wants a refresh token. Every token is granted mcp whether asked for or not;
// offline_access is granted when asked for and the client may refresh; any other scope is
// ignored (RFC 6749 §3.3). The token response's scope is always what was granted, in this
// order.
const scopeMCP = "mcp"

// Advertised scopes: the protected resource metadata's and the authorization server
// metadata's scopes_supported.
var (
	prScopes = []string{scopeMCP}
	asScopes = []string{scopeMCP, scopeOfflineAccess}
)

// grantScope returns the scope granted to client for the requested scope tokens.
func grantScope(requested []string, client store.Client) string {
	granted := scopeMCP
	if slices.Contains(requested, scopeOfflineAccess) && slices.Contains(client.GrantTypes, grantRefreshToken) {
		granted += " " + scopeOfflineAccess
	}
	return granted
}

// narrowScope returns the scope of a refreshed access token whose refresh request names
// requested: the grant's scope narrowed to the requested tokens (RFC 6749 §6). Unlike at the
// authorization endpoint, a scope the grant lacks — unknown ones included — is refused
// (invalid_scope): the request must not include any scope not originally granted. mcp is
// always kept, as every token has it.
func narrowScope(grantScope string, requested []string) (string, bool) {
	granted, _ := parseScope(grantScope)
	out := []string{scopeMCP}
	for _, sc := range requested {
		if sc == scopeMCP {
			continue
		}
		if !slices.Contains(granted, sc) {
			return "", false
		}
		out = append(out, sc)
	}
	return strings.Join(dedupe(out), " "), true
}
