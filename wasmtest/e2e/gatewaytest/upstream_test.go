package gatewaytest

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/wasmtest/e2e/harness"
)

// appSignIn signs browser b in at the mcp.client route and returns the External Token the
// application backend received for it.
func (s *upStack) appSignIn(t *testing.T, b *harness.Browser) string {
	t.Helper()
	for len(s.AppRequests) > 0 {
		<-s.AppRequests
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, page, err := b.Navigate(ctx, s.AppURL+"/", "")
	if err != nil || page == nil || page.StatusCode != 200 || string(page.Body) != "app backend" {
		t.Fatalf("app sign-in: %v %+v\n%v", err, page, b.History())
	}
	r := <-s.AppRequests
	te, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || te == "" {
		t.Fatalf("the app received no External Token: %q", r.Header.Get("Authorization"))
	}
	return te
}

// connected returns the route listing's connected flag of the upstream route.
func (s *upStack) connected(t *testing.T, te string) bool {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.AppURL+paths.Routes, nil)
	req.Header.Set("Authorization", "Bearer "+te)
	req.Header.Set("Accept", "application/json")
	resp, err := s.client(http.DefaultTransport).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Servers []struct {
			Name, URL string
			Connected bool
		}
	}
	if resp.StatusCode != 200 || json.NewDecoder(resp.Body).Decode(&out) != nil || len(out.Servers) != 1 || out.Servers[0].URL != s.RouteURL {
		t.Fatalf("listing: %d %+v", resp.StatusCode, out)
	}
	return out.Servers[0].Connected
}

// connect runs the connect flow in browser b and checks it ends at the application.
func (s *upStack) connect(t *testing.T, b *harness.Browser) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	back := s.AppURL + "/connected"
	stop, page, err := b.Navigate(ctx, s.MCPOrigin+paths.Connect+"?redirect_url="+url.QueryEscape(back), back)
	if err != nil || stop == nil {
		body := ""
		if page != nil {
			body = string(page.Body)
		}
		t.Fatalf("connect did not return to the app: %v %s\n%v", err, body, b.History())
	}
}

// bearerTransport adds an Authorization header: how an LLM API holding the TE calls MCP
// servers through the gateway.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// whoami calls whoami_upstream through the gateway with the Go SDK client holding te.
func (s *upStack) whoami(t *testing.T, te string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "llm-api", Version: "1"}, nil)
	sess, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.RouteURL, HTTPClient: s.client(bearerTransport{te})}, nil)
	if err != nil {
		return "", err
	}
	defer sess.Close()
	res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: "whoami_upstream", Arguments: map[string]any{}})
	if err != nil {
		return "", err
	}
	if len(res.Content) != 1 {
		t.Fatalf("whoami_upstream result %+v", res)
	}
	return res.Content[0].(*mcp.TextContent).Text, nil
}

// wantInvalidToken checks the documented answer to a request without a usable TI: 401
// invalid_token naming the route's protected resource metadata.
func (s *upStack) wantInvalidToken(t *testing.T, te, when string) {
	t.Helper()
	resp := mcpPost(t, s.RouteURL, te, initialize)
	wa := resp.Header.Get("WWW-Authenticate")
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(wa, `error="invalid_token"`) ||
		!strings.Contains(wa, `resource_metadata="`+s.MCPOrigin+`/.well-known/oauth-protected-resource/up"`) {
		t.Fatalf("%s: %d %q, want 401 invalid_token with the route's resource_metadata", when, resp.StatusCode, wa)
	}
}

// waitCache lets the filter's cached decision (check_cache_ttl 1s) expire.
func waitCache() { time.Sleep(1200 * time.Millisecond) }

// TestUpstream runs pattern 3 end to end, once per auth_style, against a strict upstream
// oidc-provider (it accepts only the client authentication method the route uses).
func TestUpstream(t *testing.T) {
	for _, style := range []string{"header", "params"} {
		t.Run("auth_style="+style, func(t *testing.T) {
			s := startUpstreamStack(t, style)
			b := s.browser()
			te := s.appSignIn(t, b)
			if s.connected(t, te) {
				t.Fatal("connected before connecting")
			}
			s.wantInvalidToken(t, te, "before connecting")

			// Connect: sign-in exists already, the upstream flow runs, back to the app.
			s.connect(t, b)
			if !s.connected(t, te) {
				t.Fatal("not connected after the connect flow")
			}
			who, err := s.whoami(t, te)
			if err != nil || who != upstreamAccount {
				t.Fatalf("whoami_upstream = %q, %v; want %q", who, err, upstreamAccount)
			}
			first := s.storedTI(t, "alice")
			// The MCP server received the TI, which the upstream accepts, and never the TE.
			for _, b := range s.recorded() {
				if strings.Contains(b, te) {
					t.Fatal("the MCP server received the External Token")
				}
				if s.upstreamWhoami(context.Background(), b) != upstreamAccount {
					t.Fatalf("the MCP server received %q, which the upstream does not accept", b[:min(len(b), 12)])
				}
			}

			// Close to expiry: refreshed by the gateway, without the user.
			s.advance(time.Hour - 30*time.Second)
			waitCache()
			if who, err := s.whoami(t, te); err != nil || who != upstreamAccount {
				t.Fatalf("after refresh: %q %v", who, err)
			}
			second := s.storedTI(t, "alice")
			if second == nil || second.AccessToken == first.AccessToken || second.RefreshToken == first.RefreshToken {
				t.Fatal("the TI was not refreshed (or its rotated refresh token not stored)")
			}
			if !s.connected(t, te) {
				t.Fatal("not connected after the refresh")
			}

			// Revoked at the upstream: once the TI is due, the refresh is refused, the TI
			// deleted, and requests get 401 invalid_token.
			s.Up.Revoke(t, upstreamAccount)
			s.advance(time.Hour - 30*time.Second)
			waitCache()
			s.wantInvalidToken(t, te, "after the upstream revoked the grant")
			if s.storedTI(t, "alice") != nil || s.connected(t, te) {
				t.Fatal("the refused TI is still stored")
			}
			// Signing in again (the connect) makes it work again.
			s.connect(t, b)
			waitCache()
			if who, err := s.whoami(t, te); err != nil || who != upstreamAccount {
				t.Fatalf("after connecting again: %q %v", who, err)
			}
			s.storedTI(t, "alice")

			// Disconnect: the confirmation page, its form, back to the app.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			back := s.AppURL + "/disconnected"
			_, page, err := b.Navigate(ctx, s.MCPOrigin+paths.Disconnect+"?redirect_url="+url.QueryEscape(back), back)
			if err != nil || page == nil || page.StatusCode != 200 {
				t.Fatalf("disconnect page: %v %+v", err, page)
			}
			forms, _ := page.Forms()
			if len(forms) != 1 {
				t.Fatalf("disconnect page has %d forms", len(forms))
			}
			stop, _, err := b.SubmitForm(ctx, &forms[0], nil, back)
			if err != nil || stop == nil {
				t.Fatalf("disconnect: %v", err)
			}
			if s.connected(t, te) {
				t.Fatal("connected after disconnecting")
			}
			waitCache()
			s.wantInvalidToken(t, te, "after disconnecting")

			// No upstream secret in any log line, browser URL or listing of the session.
			s.assertNoLeak(t, b)
		})
	}
}

// TestUpstream_StrictProviderRefusesTheOtherStyle: the upstream provider knows the gateway
// as a client of one authentication method and refuses the other, so the e2e runs above
// prove each auth_style for real. A route configured with the wrong style cannot connect;
// the page says why (invalid_client) without the secret.
func TestUpstream_StrictProviderRefusesTheOtherStyle(t *testing.T) {
	for style, method := range map[string]string{"header": "client_secret_post", "params": "client_secret_basic"} {
		t.Run("auth_style="+style+",provider="+method, func(t *testing.T) {
			s := startUpstreamStackWith(t, style, method)
			b := s.browser()
			te := s.appSignIn(t, b)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			back := s.AppURL + "/connected"
			stop, page, err := b.Navigate(ctx, s.MCPOrigin+paths.Connect+"?redirect_url="+url.QueryEscape(back), back)
			if err != nil || stop != nil || page == nil || page.StatusCode != http.StatusBadGateway || !strings.Contains(string(page.Body), "invalid_client") {
				t.Fatalf("connect with the wrong style: %v stop=%v page=%+v", err, stop, page)
			}
			if strings.Contains(string(page.Body), s.UpClient.ClientSecret) {
				t.Fatal("the error page shows the client secret")
			}
			if s.connected(t, te) {
				t.Fatal("connected although the provider refused the client")
			}
			s.assertNoLeak(t, b)
		})
	}
}

// assertNoLeak searches every log line of the session (debug level included), every URL the
// browser visited and every response (headers and body) the test's browsers and clients
// received for the client secret, every TI the MCP server received and every upstream
// refresh token stored.
func (s *upStack) assertNoLeak(t *testing.T, b *harness.Browser) {
	t.Helper()
	logs := s.logs.String()
	hist := strings.Join(b.History(), "\n")
	responses := s.responses.String()
	if responses == "" {
		t.Error("no responses were recorded: the search proves nothing")
	}
	for _, sec := range s.secrets() {
		if strings.Contains(logs, sec) {
			t.Errorf("an upstream secret (%.8s…) appears in the logs", sec)
		}
		if strings.Contains(hist, sec) {
			t.Errorf("an upstream secret (%.8s…) appears in a browser URL", sec)
		}
		if strings.Contains(responses, sec) {
			t.Errorf("an upstream secret (%.8s…) appears in a response", sec)
		}
	}
}

// TestUpstream_Pattern2 runs the official MCP clients' ordinary OAuth flow on the
// upstream_oauth2 route: the authorization flow runs the upstream connect before it issues
// the code, and the tool call reaches the server with the user's TI.
func TestUpstream_Pattern2(t *testing.T) {
	s := startUpstreamStack(t, "params")
	for _, c := range []struct {
		name string
		run  func(testing.TB, harness.ClientOptions) (*harness.ClientResult, error)
	}{{"GoSDK", harness.RunGoClient}, {"TSSDK", harness.RunTSClient}} {
		t.Run(c.name, func(t *testing.T) {
			// Each client starts with the user not connected.
			_ = s.Server.Store().DeleteUpstreamToken(context.Background(), "alice", s.Config.Routes[0].Normalized().ID)
			res, err := c.run(t, harness.ClientOptions{URL: s.RouteURL, Tool: "whoami_upstream"})
			if err != nil {
				t.Fatalf("%v\nresult %+v\nbrowser: %v", err, res, res.Browser)
			}
			for _, call := range []*harness.ToolCallResult{res.Call, res.CallAfterRefresh} {
				if call == nil || call.IsError || len(call.Content) != 1 || call.Content[0].Text != upstreamAccount {
					t.Fatalf("whoami_upstream = %+v, want %q\nbrowser: %v", call, upstreamAccount, res.Browser)
				}
			}
			sawUpstream := false
			for _, h := range res.Browser {
				if strings.HasPrefix(strings.TrimPrefix(h, "GET "), s.Up.Issuer+"/auth") {
					sawUpstream = true
				}
			}
			if !sawUpstream {
				t.Fatalf("the authorization flow did not run the upstream connect; browser: %v", res.Browser)
			}
			if s.storedTI(t, "alice") == nil {
				t.Fatal("no TI stored")
			}
		})
	}
	// A client whose user is connected already signs in without the upstream flow.
	res, err := harness.RunGoClient(t, harness.ClientOptions{URL: s.RouteURL, Tool: "whoami_upstream", NoRefresh: true})
	if err != nil || res.Call == nil || len(res.Call.Content) != 1 || res.Call.Content[0].Text != upstreamAccount {
		t.Fatalf("connected user: %v %+v", err, res)
	}
	for _, h := range res.Browser {
		if strings.Contains(h, s.Up.Issuer) {
			t.Fatalf("the upstream flow ran although the user was connected: %v", res.Browser)
		}
	}

	// Every bearer the MCP server received is a TI the upstream accepts (so never the TE).
	for _, b := range s.recorded() {
		if b != "" && s.upstreamWhoami(context.Background(), b) != upstreamAccount {
			t.Fatalf("the MCP server received a bearer the upstream does not accept")
		}
	}

	// The grant is revoked at the upstream: once the TI is due, requests get the documented
	// 401; the client's next sign-in runs the connect again, and its tool call works.
	te := s.appSignIn(t, s.browser())
	s.Up.Revoke(t, upstreamAccount)
	s.advance(time.Hour - 30*time.Second)
	waitCache()
	s.wantInvalidToken(t, te, "after the upstream revoked the grant")
	res, err = harness.RunGoClient(t, harness.ClientOptions{URL: s.RouteURL, Tool: "whoami_upstream", NoRefresh: true})
	if err != nil || res.Call == nil || len(res.Call.Content) != 1 || res.Call.Content[0].Text != upstreamAccount {
		t.Fatalf("signing in again after the revocation: %v %+v", err, res)
	}
	reconnected := false
	for _, h := range res.Browser {
		reconnected = reconnected || strings.Contains(h, s.Up.Issuer+"/auth")
	}
	if !reconnected {
		t.Fatalf("the sign-in did not run the upstream connect: %v", res.Browser)
	}
}
