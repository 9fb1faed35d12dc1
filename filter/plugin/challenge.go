package plugin

import "github.com/mcpmesh/gateway/shared/checkapi"

// challengeParams returns the auth-params every 401 of an MCP server route carries in its
// Bearer challenge (RFC 6750 §3, RFC 9728 §5.1): the protected resource metadata URL that MCP
// clients start their OAuth flow from, and the scope they should ask for (the MCP scope
// selection rules take it from the challenge first).
func challengeParams(resourceMetadata string) string {
	return `resource_metadata="` + resourceMetadata + `", scope="` + checkapi.Scope + `"`
}
