// Command demomcp is the quick start's MCP server: a few harmless tools and one that the
// example policy denies (delete_everything), served over streamable HTTP at /mcp. It trusts
// the gateway: it shows the identity from the X-Gateway-Assertion header without verifying
// it, which a real server would do against the gateway's JWKS.
package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"log"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type echoArgs struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

type addArgs struct {
	A float64 `json:"a"`
	B float64 `json:"b"`
}

type none struct{}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func newServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "demo-mcp-server", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo a text back"},
		func(_ context.Context, _ *mcp.CallToolRequest, a echoArgs) (*mcp.CallToolResult, any, error) {
			return text(a.Text), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Add two numbers"},
		func(_ context.Context, _ *mcp.CallToolRequest, a addArgs) (*mcp.CallToolResult, any, error) {
			b, _ := json.Marshal(a.A + a.B)
			return text(string(b)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "get-time", Description: "The server's time"},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			return text(time.Now().UTC().Format(time.RFC3339)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "whoami", Description: "The identity the gateway asserts"},
		func(_ context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
			return text(assertedIdentity(req.Extra.Header.Get("X-Gateway-Assertion"))), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "delete_everything", Description: "A tool the example policy denies"},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			return text("if you can read this, the policy let it through"), nil, nil
		})
	return s
}

// assertedIdentity decodes (without verifying) the payload of the assertion JWT.
func assertedIdentity(jwt string) string {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return "no assertion"
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return "malformed assertion"
	}
	return string(b)
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8410", "listen address")
	flag.Parse()
	srv := newServer()
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	log.Printf("demo MCP server on http://%s/mcp", *addr)
	hs := &http.Server{Addr: *addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(hs.ListenAndServe())
}
