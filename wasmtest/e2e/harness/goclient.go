package harness

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// RunGoClient runs the Go SDK client flow in-process: mcp.StreamableClientTransport with an
// auth.AuthorizationCodeHandler (dynamic registration unless opts.ClientID is set,
// RequestRefreshToken on), whose AuthorizationCodeFetcher drives opts.Browser (a new one if
// nil) to a loopback redirect URI. Then tools/list, tools/call, a forced refresh (the token
// source is told its access token expired, so x/oauth2 redeems the refresh token on the next
// request), and tools/call again. The result is returned even when the flow failed, with an
// error wrapping the first failure.
func RunGoClient(t testing.TB, opts ClientOptions) (*ClientResult, error) {
	t.Helper()
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	r := &goRun{res: &ClientResult{ServerURL: opts.URL, Steps: []string{}, Tools: []string{}}, browser: opts.Browser}
	if r.browser == nil {
		r.browser = NewBrowser()
	}
	if opts.Deny {
		r.browser.ConsentButton = FormButton{Name: "action", Value: "deny"}
	}
	if opts.HTTPClient != nil && opts.Browser == nil {
		r.browser.Client.Transport = opts.HTTPClient.Transport
	}
	if opts.HTTPClient != nil {
		ctx = context.WithValue(ctx, oauth2.HTTPClient, opts.HTTPClient)
	}
	err := r.run(ctx, opts)
	r.res.Browser = r.browser.History()
	if err != nil {
		r.res.Error = err.Error()
		return r.res, fmt.Errorf("%w: Go SDK client: %w (steps %v)", errClientFailed, err, r.res.Steps)
	}
	r.res.OK = true
	return r.res, nil
}

// goRun is the state of one Go client flow.
type goRun struct {
	browser *Browser

	mu      sync.Mutex
	res     *ClientResult
	source  *refreshingSource
	authN   int
	lastErr error
}

func (r *goRun) step(s string) {
	r.mu.Lock()
	r.res.Steps = append(r.res.Steps, s)
	r.mu.Unlock()
}

func (r *goRun) run(ctx context.Context, opts ClientOptions) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("listen for the redirect URI: %w", err)
	}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte("Authorization complete; you may close this window.\n"))
		}),
		ReadHeaderTimeout: 5 * time.Second,
	}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	redirect := "http://" + ln.Addr().String() + "/callback"

	cfg := &auth.AuthorizationCodeHandlerConfig{
		Client:                   opts.HTTPClient,
		RedirectURL:              redirect,
		AuthorizationCodeFetcher: r.fetchCode(redirect),
		RequestRefreshToken:      true,
		NewTokenSource: func(ctx context.Context, c *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
			s := &refreshingSource{ctx: ctx, cfg: c, tok: tok}
			r.mu.Lock()
			r.source = s
			r.res.ClientID = c.ClientID
			if sc, ok := tok.Extra("scope").(string); ok {
				r.res.Scope = sc
			}
			r.mu.Unlock()
			return s, nil
		},
	}
	if opts.ClientID != "" {
		cfg.PreregisteredClient = &oauthex.ClientCredentials{ClientID: opts.ClientID}
		if opts.ClientSecret != "" {
			cfg.PreregisteredClient.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: opts.ClientSecret}
		}
	} else {
		r.res.Registered = true
		cfg.DynamicClientRegistrationConfig = &auth.DynamicClientRegistrationConfig{
			Metadata: &oauthex.ClientRegistrationMetadata{
				ClientName:              "gateway-e2e-go-client",
				RedirectURIs:            []string{redirect},
				GrantTypes:              []string{"authorization_code", "refresh_token"},
				ResponseTypes:           []string{"code"},
				TokenEndpointAuthMethod: "none",
				Scope:                   opts.Scope,
			},
		}
	}
	inner, err := auth.NewAuthorizationCodeHandler(cfg)
	if err != nil {
		return fmt.Errorf("create authorization code handler: %w", err)
	}
	transport := &mcp.StreamableClientTransport{
		Endpoint:     opts.URL,
		OAuthHandler: &recordingHandler{inner: inner, run: r},
		MaxRetries:   -1,
		HTTPClient:   opts.HTTPClient,
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "gateway-e2e-go-client", Version: "1.0.0"}, nil)
	var sessionOpts *mcp.ClientSessionOptions
	if opts.ProtocolVersion != "" {
		sessionOpts = &mcp.ClientSessionOptions{ProtocolVersion: opts.ProtocolVersion}
	}
	session, err := client.Connect(ctx, transport, sessionOpts)
	if err != nil {
		return r.withAuthError(fmt.Errorf("connect: %w", err))
	}
	defer session.Close()
	r.step("connected")

	tools, err := session.ListTools(ctx, &mcp.ListToolsParams{})
	if err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	for _, tool := range tools.Tools {
		r.res.Tools = append(r.res.Tools, tool.Name)
	}
	r.step("tools/list")
	if opts.Tool != "" {
		out, err := callTool(ctx, session, opts)
		if err != nil {
			return err
		}
		r.res.Call = out
		r.step("tools/call")
	}
	if opts.DeniedTool != "" {
		denied := opts
		denied.Tool = opts.DeniedTool
		out, err := callTool(ctx, session, denied)
		if err != nil {
			r.res.DeniedCallError = err.Error()
		}
		r.res.DeniedCall = out
		r.step("tools/call-denied")
	}
	if opts.NoRefresh {
		return nil
	}

	r.mu.Lock()
	src, authBefore := r.source, r.authN
	r.mu.Unlock()
	if src == nil {
		return errors.New("no token source after authorization")
	}
	if opts.BeforeRefresh != nil {
		opts.BeforeRefresh()
	}
	before, err := src.force()
	if err != nil {
		return err
	}
	var callErr error
	if opts.Tool != "" {
		out, err := callTool(ctx, session, opts)
		if err != nil {
			callErr = r.withAuthError(fmt.Errorf("after refresh: %w", err))
		}
		r.res.CallAfterRefresh = out
	} else if _, err := session.ListTools(ctx, &mcp.ListToolsParams{}); err != nil {
		callErr = r.withAuthError(fmt.Errorf("tools/list after refresh: %w", err))
	}
	after, refreshes, refreshErr := src.state()
	r.mu.Lock()
	authAfter := r.authN
	r.mu.Unlock()
	if refreshErr != nil {
		var re *oauth2.RetrieveError
		if errors.As(refreshErr, &re) && re.ErrorCode != "" {
			r.res.RefreshError = re.ErrorCode
		} else {
			r.res.RefreshError = refreshErr.Error()
		}
		if callErr != nil {
			return fmt.Errorf("refresh: %w; then %w", refreshErr, callErr)
		}
		return fmt.Errorf("refresh: %w", refreshErr)
	}
	if callErr != nil {
		return callErr
	}
	if refreshes == 0 || authAfter != authBefore {
		return fmt.Errorf("the access token was not refreshed (refreshes %d, authorizations %d -> %d)", refreshes, authBefore, authAfter)
	}
	r.res.Refreshed = true
	r.res.AccessTokenChanged = after.AccessToken != before.AccessToken
	r.res.RefreshTokenRotated = after.RefreshToken != "" && after.RefreshToken != before.RefreshToken
	if sc, ok := after.Extra("scope").(string); ok {
		r.res.Scope = sc
	}
	// The call after the refresh is recorded once the refresh is known to have happened.
	if opts.Tool != "" {
		r.step("refresh")
		r.step("tools/call-after-refresh")
	} else {
		r.step("refresh")
		r.step("tools/list-after-refresh")
	}
	if !r.res.AccessTokenChanged {
		return errors.New("refresh returned the same access token")
	}
	return nil
}

// withAuthError prefers the authorization flow's own error, which the transport may have
// replaced with a generic one.
func (r *goRun) withAuthError(err error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lastErr != nil {
		return fmt.Errorf("%w (authorization: %w)", err, r.lastErr)
	}
	return err
}

// fetchCode is the AuthorizationCodeFetcher: it drives the Browser to the redirect URI.
func (r *goRun) fetchCode(redirect string) auth.AuthorizationCodeFetcher {
	return func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		r.step("authorization-request")
		if u, err := url.Parse(args.URL); err == nil {
			params := map[string]string{}
			for k, v := range u.Query() {
				if k != "state" && k != "code_challenge" && len(v) > 0 {
					params[k] = v[0]
				}
			}
			r.mu.Lock()
			r.res.AuthorizationParams = params
			r.mu.Unlock()
		}
		stop, err := r.browser.Authorize(ctx, args.URL, redirect)
		if err != nil {
			return nil, fmt.Errorf("browser: %w", err)
		}
		q := stop.Query()
		if e := q.Get("error"); e != "" {
			return nil, fmt.Errorf("authorization failed: %s %s", e, q.Get("error_description"))
		}
		r.step("callback")
		return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
	}
}

// recordingHandler wraps the SDK's handler to record the 401/403 and the token step.
type recordingHandler struct {
	inner *auth.AuthorizationCodeHandler
	run   *goRun
}

func (h *recordingHandler) TokenSource(ctx context.Context) (oauth2.TokenSource, error) {
	return h.inner.TokenSource(ctx)
}

func (h *recordingHandler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	if resp.StatusCode == http.StatusUnauthorized {
		h.run.step("unauthorized")
	} else {
		h.run.step(fmt.Sprintf("status-%d", resp.StatusCode))
	}
	h.run.mu.Lock()
	h.run.authN++
	h.run.mu.Unlock()
	err := h.inner.Authorize(ctx, req, resp)
	h.run.mu.Lock()
	h.run.lastErr = err
	h.run.mu.Unlock()
	if err == nil {
		h.run.step("token")
	}
	return err
}

// refreshingSource is the token source given to the SDK: it returns the current token while it
// is valid and otherwise redeems the refresh token, and can be told to treat the current access
// token as expired.
type refreshingSource struct {
	ctx context.Context
	cfg *oauth2.Config

	mu        sync.Mutex
	tok       *oauth2.Token
	expired   bool
	refreshes int
	err       error
}

func (s *refreshingSource) Token() (*oauth2.Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.expired && s.tok.Valid() {
		return s.tok, nil
	}
	if s.tok.RefreshToken == "" {
		s.err = errors.New("access token expired and no refresh token was issued")
		return nil, s.err
	}
	nt, err := s.cfg.TokenSource(s.ctx, &oauth2.Token{RefreshToken: s.tok.RefreshToken}).Token()
	if err != nil {
		s.err = err
		return nil, err
	}
	s.tok, s.expired, s.err = nt, false, nil
	s.refreshes++
	return nt, nil
}

// force marks the access token expired and returns the token it had.
func (s *refreshingSource) force() (*oauth2.Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tok.RefreshToken == "" {
		return nil, errors.New("no refresh token was issued, cannot refresh")
	}
	s.expired = true
	return s.tok, nil
}

func (s *refreshingSource) state() (*oauth2.Token, int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tok, s.refreshes, s.err
}

func callTool(ctx context.Context, s *mcp.ClientSession, opts ClientOptions) (*ToolCallResult, error) {
	args := opts.Args
	if args == nil {
		args = map[string]any{}
	}
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: opts.Tool, Arguments: args})
	if err != nil {
		return nil, fmt.Errorf("tools/call %s: %w", opts.Tool, err)
	}
	out := &ToolCallResult{IsError: res.IsError, Content: []ContentItem{}}
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			out.Content = append(out.Content, ContentItem{Type: "text", Text: c.Text})
		case *mcp.ImageContent:
			out.Content = append(out.Content, ContentItem{Type: "image"})
		case *mcp.AudioContent:
			out.Content = append(out.Content, ContentItem{Type: "audio"})
		case *mcp.EmbeddedResource:
			out.Content = append(out.Content, ContentItem{Type: "resource"})
		case *mcp.ResourceLink:
			out.Content = append(out.Content, ContentItem{Type: "resource_link"})
		default:
			out.Content = append(out.Content, ContentItem{Type: fmt.Sprintf("%T", c)})
		}
	}
	return out, nil
}
