package gatewaytest

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmesh/gateway/sdk/go/assertion"
	"github.com/mcpmesh/gateway/sdk/go/assertion/mcpauth"
	"github.com/mcpmesh/gateway/wasmtest/e2e/harness"
)

// startSDKUpstreams starts the two MCP servers of stackOptions.SDKServers, each verifying the
// assertion against the JWKS the gateway publishes on the MCP route host: one written with
// the official MCP Go SDK behind sdk/go/assertion/mcpauth, one in Python (Starlette + uvicorn)
// behind mcpmesh_assertion's ASGI middleware. Each has one tool, whoami, that answers with
// the caller's email. It returns their base URLs.
func startSDKUpstreams(t *testing.T, s *stack) (goURL, pyURL string) {
	t.Helper()
	jwks := s.MCPOrigin + "/.well-known/gateway/jwks.json"
	audience := strings.TrimPrefix(s.MCPOrigin, "http://")
	v, err := assertion.NewVerifier(assertion.Config{JWKSURL: jwks, Issuer: s.AuthURL, Audience: audience})
	if err != nil {
		t.Fatal(err)
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "whoami-go", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{Name: "whoami", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			id := mcpauth.IdentityFromRequest(req)
			if id == nil {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no identity"}}}, nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: id.Email}}}, nil
		})
	goSrv := httptest.NewServer(mcpauth.Handler(v, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)))
	t.Cleanup(goSrv.Close)
	return goSrv.URL, harness.StartPythonWhoami(t, jwks, s.AuthURL, audience)
}

// A signed-in MCP client (the Go SDK client, OAuth through the gateway) calls whoami on an
// MCP server that only trusts the gateway's assertion: the answer is the caller's email, which
// the server read from the verified assertion; without the gateway the server answers 401.
func TestGateway_SDKServersSeeTheCallerFromTheAssertion(t *testing.T) {
	s := startStackWith(t, stackOptions{SDKServers: true})
	for _, tt := range []struct{ name, url, upstream string }{
		{"Go SDK server with sdk/go/assertion/mcpauth", s.SDKGoURL, s.SDKGoUpstream},
		{"Python ASGI server with mcpmesh_assertion", s.SDKPythonURL, s.SDKPythonUpstream},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, err := harness.RunGoClient(t, harness.ClientOptions{URL: tt.url, Tool: "whoami"})
			if err != nil {
				t.Fatalf("%v\nbrowser: %v", err, res.Browser)
			}
			for _, call := range []*harness.ToolCallResult{res.Call, res.CallAfterRefresh} {
				if call == nil || call.IsError || len(call.Content) != 1 || call.Content[0].Text != harness.Alice().Email {
					t.Fatalf("whoami = %+v, want %q", call, harness.Alice().Email)
				}
			}
			// Straight to the server, with a forged assertion: refused.
			req, _ := http.NewRequest(http.MethodPost, tt.upstream, strings.NewReader(initialize))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("X-Gateway-Assertion", "eyJhbGciOiJub25lIn0.eyJlbWFpbCI6Im1hbGxvcnlAZXhhbXBsZS5jb20ifQ.")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("forged assertion straight to the server: %d, want 401", resp.StatusCode)
			}
		})
	}
}
