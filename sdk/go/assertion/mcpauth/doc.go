// Package mcpauth puts the gateway's identity assertion in front of an MCP server built with
// the official MCP Go SDK (github.com/modelcontextprotocol/go-sdk).
//
// [Handler] wraps the SDK's HTTP handler (mcp.NewStreamableHTTPHandler): a request without
// exactly one valid X-Gateway-Assertion header gets 401 with the reason; otherwise the
// identity is handed to the SDK as its auth.TokenInfo (UserID = the assertion's sub, so the
// SDK binds each session to the user who created it and answers 403 to another user). Tool,
// prompt and resource handlers read it with [IdentityFromRequest] (the SDK passes the
// TokenInfo in req.Extra) and plain HTTP handlers with assertion.FromContext. The handler's
// own Authorization header is left as the client sent it.
//
// It imports only package assertion and the MCP Go SDK (docs/sdk-go.md).
package mcpauth
