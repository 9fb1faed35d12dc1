package harness

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	mcpgoclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// mcpGoRedirectURI is the loopback redirect URI of the mcp-go flow; the Browser stops before
// requesting it, so nothing listens there.
const mcpGoRedirectURI = "http://127.0.0.1:9/oauth/callback"

// RunMCPGoClient runs mark3labs/mcp-go's OAuth client (client.NewOAuthStreamableHttpClient)
// in-process, as its own example does: Initialize fails with an OAuth-authorization-required
// error, the client registers dynamically, builds the authorization URL with PKCE and state,
// a [Browser] signs in to the redirect URI, ProcessAuthorizationResponse redeems the code
// (state checked), Initialize again (mcp-go tries the 2026-07-28 stateless core first), then
// tools/list, tools/call of opts.Tool and opts.DeniedTool, the OAuth handler's RefreshToken
// with the stored refresh token, and tools/call again with the new token.
func RunMCPGoClient(t testing.TB, opts ClientOptions) (*ClientResult, error) {
	t.Helper()
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	res := &ClientResult{ServerURL: opts.URL, Steps: []string{}, Tools: []string{}, Registered: true}
	browser := opts.Browser
	if browser == nil {
		browser = NewBrowser()
		if opts.HTTPClient != nil {
			browser.Client.Transport = opts.HTTPClient.Transport
		}
	}
	err := runMCPGo(ctx, opts, browser, res)
	res.Browser = browser.History()
	if err != nil {
		res.Error = err.Error()
		return res, fmt.Errorf("%w: mcp-go client: %w (steps %v)", errClientFailed, err, res.Steps)
	}
	res.OK = true
	return res, nil
}

func runMCPGo(ctx context.Context, opts ClientOptions, browser *Browser, res *ClientResult) error {
	store := mcpgoclient.NewMemoryTokenStore()
	cfg := mcpgoclient.OAuthConfig{
		RedirectURI: mcpGoRedirectURI,
		TokenStore:  store,
		PKCEEnabled: true,
		HTTPClient:  opts.HTTPClient,
	}
	var topts []transport.StreamableHTTPCOption
	if opts.HTTPClient != nil {
		topts = append(topts, transport.WithHTTPBasicClient(opts.HTTPClient))
	}
	c, err := mcpgoclient.NewOAuthStreamableHttpClient(opts.URL, cfg, topts...)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.Start(ctx); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	init := mcpgo.InitializeRequest{}
	init.Params.ClientInfo = mcpgo.Implementation{Name: "gateway-e2e-mcp-go", Version: "1.0.0"}
	_, err = c.Initialize(ctx, init)
	if err == nil {
		return errors.New("initialize succeeded without authorization")
	}
	if !mcpgoclient.IsOAuthAuthorizationRequiredError(err) {
		return fmt.Errorf("initialize: %w", err)
	}
	res.Steps = append(res.Steps, "unauthorized")
	h := mcpgoclient.GetOAuthHandler(err)
	if err := h.RegisterClient(ctx, "gateway-e2e-mcp-go"); err != nil {
		return fmt.Errorf("register: %w", err)
	}
	res.ClientID = h.GetClientID()
	verifier, err := mcpgoclient.GenerateCodeVerifier()
	if err != nil {
		return err
	}
	state, err := mcpgoclient.GenerateState()
	if err != nil {
		return err
	}
	authURL, err := h.GetAuthorizationURL(ctx, state, mcpgoclient.GenerateCodeChallenge(verifier))
	if err != nil {
		return fmt.Errorf("authorization URL: %w", err)
	}
	res.Steps = append(res.Steps, "authorization-request")
	stop, err := browser.Authorize(ctx, authURL, mcpGoRedirectURI)
	if err != nil {
		return fmt.Errorf("browser: %w", err)
	}
	q := stop.Query()
	if e := q.Get("error"); e != "" {
		return fmt.Errorf("authorization failed: %s %s", e, q.Get("error_description"))
	}
	res.Steps = append(res.Steps, "callback")
	if err := h.ProcessAuthorizationResponse(ctx, q.Get("code"), q.Get("state"), verifier); err != nil {
		return fmt.Errorf("token: %w", err)
	}
	res.Steps = append(res.Steps, "token")
	if _, err := c.Initialize(ctx, init); err != nil {
		return fmt.Errorf("initialize after authorization: %w", err)
	}
	res.Steps = append(res.Steps, "connected")
	tools, err := c.ListTools(ctx, mcpgo.ListToolsRequest{})
	if err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	for _, tl := range tools.Tools {
		res.Tools = append(res.Tools, tl.Name)
	}
	res.Steps = append(res.Steps, "tools/list")
	call := func(tool string) (*ToolCallResult, error) {
		req := mcpgo.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = tool, opts.Args
		r, err := c.CallTool(ctx, req)
		if err != nil {
			return nil, err
		}
		out := &ToolCallResult{IsError: r.IsError, Content: []ContentItem{}}
		for _, content := range r.Content {
			if tc, ok := mcpgo.AsTextContent(content); ok {
				out.Content = append(out.Content, ContentItem{Type: "text", Text: tc.Text})
			} else {
				out.Content = append(out.Content, ContentItem{Type: fmt.Sprintf("%T", content)})
			}
		}
		return out, nil
	}
	if opts.Tool != "" {
		if res.Call, err = call(opts.Tool); err != nil {
			return fmt.Errorf("tools/call %s: %w", opts.Tool, err)
		}
		res.Steps = append(res.Steps, "tools/call")
	}
	if opts.DeniedTool != "" {
		if res.DeniedCall, err = call(opts.DeniedTool); err != nil {
			res.DeniedCallError = err.Error()
		}
		res.Steps = append(res.Steps, "tools/call-denied")
	}
	before, err := store.GetToken(ctx)
	if err != nil {
		return fmt.Errorf("stored token: %w", err)
	}
	if before.RefreshToken == "" {
		return errors.New("no refresh token was issued")
	}
	after, err := h.RefreshToken(ctx, before.RefreshToken)
	if err != nil {
		res.RefreshError = err.Error()
		return fmt.Errorf("refresh: %w", err)
	}
	res.Refreshed = true
	res.AccessTokenChanged = after.AccessToken != before.AccessToken
	res.RefreshTokenRotated = after.RefreshToken != "" && after.RefreshToken != before.RefreshToken
	res.Steps = append(res.Steps, "refresh")
	if !res.AccessTokenChanged {
		return errors.New("refresh returned the same access token")
	}
	if opts.Tool != "" {
		if res.CallAfterRefresh, err = call(opts.Tool); err != nil {
			return fmt.Errorf("tools/call after refresh: %w", err)
		}
		res.Steps = append(res.Steps, "tools/call-after-refresh")
	}
	return nil
}
