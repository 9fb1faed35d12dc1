// Command demomcp is the quick start's MCP server: a few harmless tools and one that the
// example policy denies (delete_everything), served over streamable HTTP at /mcp. It trusts
// the gateway: it shows the identity from the X-Gateway-Assertion header without verifying
// it, which a real server would do against the gateway's JWKS.
//
// With -upstream-userinfo URL it also has the tool upstream_whoami, for routes with
// upstream_oauth2 (pattern 2 and 3): it sends the bearer token the gateway forwarded (the
// user's Internal Token) to the upstream provider's userinfo endpoint and returns the account
// the provider names, so a test or a person can see which upstream account's token arrived.
// The token itself is never shown.
package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
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

func newServer(userinfo string) *mcp.Server {
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
	if userinfo != "" {
		client := &http.Client{Timeout: 10 * time.Second}
		mcp.AddTool(s, &mcp.Tool{Name: "upstream_whoami", Description: "The upstream account whose token the gateway forwarded"},
			func(ctx context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
				return upstreamWhoami(ctx, client, userinfo, req.Extra.Header.Get("Authorization")), nil, nil
			})
	}
	return s
}

// upstreamWhoami asks the upstream provider's userinfo endpoint who the forwarded bearer token
// belongs to. The answer names the account (sub, email, name), never the token.
func upstreamWhoami(ctx context.Context, client *http.Client, userinfo, authorization string) *mcp.CallToolResult {
	fail := func(msg string) *mcp.CallToolResult {
		r := text(msg)
		r.IsError = true
		return r
	}
	scheme, token, ok := strings.Cut(authorization, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		return fail("no upstream token: the gateway forwarded no bearer token")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, userinfo, nil)
	if err != nil {
		return fail("userinfo request: " + err.Error())
	}
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(token))
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return fail("upstream userinfo: " + err.Error())
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return fail(fmt.Sprintf("the upstream provider refused the forwarded token: %s", resp.Status))
	}
	var claims struct {
		Sub   string `json:"sub"`
		Email string `json:"email"`
		Name  string `json:"name"`
	}
	if err := json.Unmarshal(body, &claims); err != nil || claims.Sub == "" {
		return fail("the upstream userinfo answer has no sub")
	}
	b, _ := json.Marshal(map[string]string{"upstream_sub": claims.Sub, "upstream_email": claims.Email, "upstream_name": claims.Name})
	return text(string(b))
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
	userinfo := flag.String("upstream-userinfo", "", "the upstream OAuth provider's userinfo URL; adds the tool upstream_whoami")
	flag.Parse()
	srv := newServer(*userinfo)
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	l, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("demo MCP server on http://%s/mcp", l.Addr())
	fmt.Printf("READY http://%s\n", l.Addr())
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(hs.Serve(l))
}
