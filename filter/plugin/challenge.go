package plugin

import (
	"strings"

	"github.com/mcpmesh/gateway/shared/checkapi"
	"github.com/mcpmesh/gateway/shared/wwwauth"
)

// challengeParams returns the auth-params every 401 of an MCP server route carries in its
// Bearer challenge (RFC 6750 §3, RFC 9728 §5.1): the protected resource metadata URL that MCP
// clients start their OAuth flow from, and the scope they should ask for (the MCP scope
// selection rules take it from the challenge first).
func challengeParams(resourceMetadata string) string {
	return `resource_metadata="` + resourceMetadata + `", scope="` + checkapi.Scope + `"`
}

// Bounds of the scopes a step-up challenge passes on.
const (
	maxStepUpScopes   = 16
	maxStepUpScopeLen = 128
)

// stepUpChallenge turns an upstream's insufficient_scope challenge (a 403 on a route that
// sends an Internal Token) into the gateway's own: the MCP client is sent to the gateway's
// authorization server, never the upstream's, asking for mcp and the scopes the upstream
// named; the token service then connects the upstream again for them
// (docs/upstream-discovery.md "Step-up"). ok is false for any other challenge or scopes that
// are not plain scope tokens.
func stepUpChallenge(upstream, resourceMetadata string) (string, bool) {
	c, ok := wwwauth.Parse(upstream)
	if !ok || c.Error != "insufficient_scope" {
		return "", false
	}
	scope := checkapi.Scope
	n := 0
	for _, sc := range strings.Fields(c.Scope) {
		if sc == checkapi.Scope || !scopeToken(sc) {
			continue
		}
		if n++; n > maxStepUpScopes {
			return "", false
		}
		scope += " " + sc
	}
	if n == 0 {
		return "", false
	}
	return `Bearer error="insufficient_scope", resource_metadata="` + resourceMetadata + `", scope="` + scope + `"`, true
}

// scopeToken reports whether s is an RFC 6749 scope-token that can sit in a quoted string
// unescaped.
func scopeToken(s string) bool {
	if s == "" || len(s) > maxStepUpScopeLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
