package mcpauth_test

import (
	"context"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmesh/gateway/sdk/go/assertion"
	"github.com/mcpmesh/gateway/sdk/go/assertion/mcpauth"
)

// The example of docs/sdk-go.md: an MCP server whose tool answers with the caller's email.
func ExampleHandler() {
	v, err := assertion.NewVerifier(assertion.Config{
		JWKSURL:  "https://mcp.example.com/.well-known/gateway/jwks.json",
		Issuer:   "https://auth.example.com",
		Audience: "mcp.example.com",
	})
	if err != nil {
		panic(err)
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "whoami", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "whoami"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		email := mcpauth.IdentityFromRequest(req).Email
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: email}}}, nil, nil
	})
	handler := mcpauth.Handler(v, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	_ = handler // http.ListenAndServe(":8080", handler)
}
