package gatewaytest

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/wasmtest/e2e/harness"
	"golang.org/x/oauth2"
)

// client is an MCP client registered at the gateway by dynamic client registration, with the
// token it obtained through a browser sign-in at the real OpenID provider.
type client struct {
	Config   *oauth2.Config
	Token    *oauth2.Token
	Resource string
}

const redirectURI = "http://127.0.0.1:9/callback"

// signIn registers a public client on the MCP route host and runs the authorization-code
// flow with PKCE for resource (the MCP URL), approving the consent page.
func signIn(t *testing.T, s *stack, resource string) *client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	reg, _ := json.Marshal(map[string]any{
		"client_name":                "gateway e2e",
		"redirect_uris":              []string{redirectURI},
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
		"token_endpoint_auth_method": "none",
	})
	resp, err := http.Post(s.MCPOrigin+"/.gateway/mcp/register", "application/json", bytes.NewReader(reg))
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		ClientID string `json:"client_id"`
	}
	err = json.NewDecoder(resp.Body).Decode(&out)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || err != nil || out.ClientID == "" {
		t.Fatalf("registration: %d %v", resp.StatusCode, err)
	}
	cfg := &oauth2.Config{
		ClientID:    out.ClientID,
		RedirectURL: redirectURI,
		Scopes:      []string{"offline_access"},
		Endpoint: oauth2.Endpoint{
			AuthURL:   s.MCPOrigin + "/.gateway/mcp/authorize",
			TokenURL:  s.MCPOrigin + "/.gateway/mcp/token",
			AuthStyle: oauth2.AuthStyleInParams,
		},
	}
	verifier := oauth2.GenerateVerifier()
	res := oauth2.SetAuthURLParam("resource", resource)
	authURL := cfg.AuthCodeURL("state-123", oauth2.S256ChallengeOption(verifier), res)
	cb, err := harness.NewBrowser().Authorize(ctx, authURL, redirectURI)
	if err != nil {
		t.Fatalf("authorize: %v", err)
	}
	q := cb.Query()
	if q.Get("state") != "state-123" || q.Get("iss") != s.MCPOrigin || q.Get("code") == "" {
		t.Fatalf("callback %s: want state, iss=%s and a code", cb, s.MCPOrigin)
	}
	tok, err := cfg.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(verifier), res)
	if err != nil {
		t.Fatalf("token: %v", err)
	}
	if tok.RefreshToken == "" {
		t.Fatal("no refresh token issued")
	}
	return &client{Config: cfg, Token: tok, Resource: resource}
}

// refresh redeems the client's refresh token.
func (c *client) refresh(ctx context.Context) (*oauth2.Token, error) {
	expired := *c.Token
	expired.Expiry = time.Now().Add(-time.Hour)
	return c.Config.TokenSource(ctx, &expired).Token()
}

// mcpPost sends a JSON-RPC message to an MCP URL with a bearer token.
func mcpPost(t *testing.T, url, token, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewBufferString(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`
