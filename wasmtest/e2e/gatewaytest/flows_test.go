package gatewaytest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/wasmtest/e2e/harness"
	"golang.org/x/oauth2"
)

// One stack serves the tests of this file; each test uses its own clients.
func TestGateway(t *testing.T) {
	s := startStack(t)

	t.Run("TSClient_FullFlowWithRefresh", func(t *testing.T) {
		res, err := harness.RunTSClient(t, harness.ClientOptions{URL: s.RestrictedURL, Tool: "test_simple_text"})
		if err != nil {
			t.Fatalf("%v\nbrowser: %v", err, res.Browser)
		}
		if !res.Registered || !res.Refreshed || !res.RefreshTokenRotated || !slices.Contains(res.Tools, "test_simple_text") ||
			res.Call == nil || res.Call.IsError || res.CallAfterRefresh == nil || res.CallAfterRefresh.IsError {
			t.Fatalf("result %+v", res)
		}
		if res.AuthorizationParams["resource"] != s.RestrictedURL || res.AuthorizationParams["code_challenge_method"] != "S256" {
			t.Errorf("authorization request %v", res.AuthorizationParams)
		}
	})

	t.Run("TSClient_DeniedToolIsRefusedByPolicy", func(t *testing.T) {
		// The denial reaches the client as the tool's result (isError), not as an exception.
		res, err := harness.RunTSClient(t, harness.ClientOptions{URL: s.RestrictedURL, Tool: "test_error_handling", NoRefresh: true})
		if err != nil || res.Call == nil || !res.Call.IsError || len(res.Call.Content) == 0 ||
			!strings.Contains(res.Call.Content[0].Text, `does not allow the tool "test_error_handling"`) {
			t.Fatalf("err %v, result %+v", err, res)
		}
		if !slices.Contains(res.Steps, "tools/list") {
			t.Errorf("tools/list (not a tool call) should have passed; steps %v", res.Steps)
		}
	})

	t.Run("GoClient_FullFlowWithRefresh", func(t *testing.T) {
		res, err := harness.RunGoClient(t, harness.ClientOptions{URL: s.OpenURL, Tool: "test_simple_text"})
		if err != nil {
			t.Fatalf("%v\nbrowser: %v", err, res.Browser)
		}
		if !res.Refreshed || res.Call == nil || res.Call.IsError || res.CallAfterRefresh == nil || res.CallAfterRefresh.IsError {
			t.Fatalf("result %+v", res)
		}
	})

	t.Run("TokenForOneServerIsRefusedByAnother", func(t *testing.T) {
		c := signIn(t, s, s.RestrictedURL)
		if r := mcpPost(t, s.RestrictedURL, c.Token.AccessToken, initialize); r.StatusCode != http.StatusOK {
			t.Fatalf("own server: %d", r.StatusCode)
		}
		r := mcpPost(t, s.OpenURL, c.Token.AccessToken, initialize)
		if r.StatusCode != http.StatusUnauthorized || !strings.Contains(r.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
			t.Fatalf("other server: %d %q", r.StatusCode, r.Header.Get("WWW-Authenticate"))
		}
	})

	t.Run("RefreshTokenReuseRevokesTheFamily", func(t *testing.T) {
		c := signIn(t, s, s.OpenURL)
		ctx := context.Background()
		next, err := c.refresh(ctx)
		if err != nil || next.RefreshToken == c.Token.RefreshToken {
			t.Fatalf("first refresh: %v (rotated %v)", err, next != nil && next.RefreshToken != c.Token.RefreshToken)
		}
		s.advance(config.DefaultRefreshTokenReuseInterval + time.Second) // past the reuse interval
		if _, err := c.refresh(ctx); !isInvalidGrant(err) {
			t.Fatalf("replayed refresh token: %v, want invalid_grant", err)
		}
		// The family is gone: the rotated refresh token and its access token too.
		c.Token = next
		if _, err := c.refresh(ctx); !isInvalidGrant(err) {
			t.Fatalf("refresh after reuse: %v, want invalid_grant", err)
		}
		if r := mcpPost(t, s.OpenURL, next.AccessToken, initialize); r.StatusCode != http.StatusUnauthorized {
			t.Fatalf("access token of a revoked family: %d", r.StatusCode)
		}
	})

	t.Run("ConcurrentRefreshStaysSignedIn", func(t *testing.T) { concurrentRefreshStaysSignedIn(t, s) })

	t.Run("ForgedAssertionAndTokenNeverReachTheMCPServer", func(t *testing.T) {
		// The everything-server cannot show headers, so this is checked on the client route
		// below and in the filter scenarios; here: a forged assertion does not get through
		// without a token.
		req, _ := http.NewRequest(http.MethodPost, s.OpenURL, strings.NewReader(initialize))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Gateway-Assertion", "forged")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), "resource_metadata=\""+s.MCPOrigin+"/.well-known/oauth-protected-resource/mcp\"") {
			t.Fatalf("%d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	})

	t.Run("ClientRouteBrowserSessionGetsExternalTokenAndListsServers", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		b := harness.NewBrowser()
		_, page, err := b.Navigate(ctx, s.AppURL+"/dashboard", "")
		if err != nil || page == nil || string(page.Body) != "app backend" {
			t.Fatalf("navigate: %v, page %+v\nhistory %v", err, page, b.History())
		}
		var got *http.Request
		select {
		case got = <-s.AppRequests:
		case <-ctx.Done():
			t.Fatal("backend got no request")
		}
		te, ok := strings.CutPrefix(got.Header.Get("Authorization"), "Bearer ")
		if !ok || te == "" {
			t.Fatalf("backend Authorization = %q", got.Header.Get("Authorization"))
		}
		if strings.Contains(got.Header.Get("Cookie"), "_gateway_session") {
			t.Errorf("the session cookie reached the backend: %q", got.Header.Get("Cookie"))
		}
		claims := verifyAssertion(t, s.AppURL, got.Header.Get("X-Gateway-Assertion"))
		if claims["email"] != "alice@example.com" || claims["aud"] != strings.TrimPrefix(s.AppURL, "http://") {
			t.Errorf("assertion claims %v", claims)
		}

		// The backend lists the MCP servers with the External Token…
		req, _ := http.NewRequest(http.MethodGet, s.AppURL+"/.gateway/mcp/routes", nil)
		req.Header.Set("Authorization", "Bearer "+te)
		req.Header.Set("Accept", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var listing struct {
			Servers []struct {
				Name      string `json:"name"`
				URL       string `json:"url"`
				Connected bool   `json:"connected"`
			} `json:"servers"`
		}
		err = json.NewDecoder(resp.Body).Decode(&listing)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || len(listing.Servers) != 2 {
			t.Fatalf("listing: %d %v %+v", resp.StatusCode, err, listing)
		}
		for _, srv := range listing.Servers {
			if !srv.Connected || (srv.URL != s.OpenURL && srv.URL != s.RestrictedURL) {
				t.Errorf("server %+v", srv)
			}
		}
		// …and that token (issued without a resource) works at an MCP server route.
		if r := mcpPost(t, s.OpenURL, te, initialize); r.StatusCode != http.StatusOK {
			t.Fatalf("External Token of the app at the MCP route: %d", r.StatusCode)
		}
	})

	t.Run("ExpiredSessionIsRecreatedThenProviderRefusalIsInvalidGrant", func(t *testing.T) {
		c := signIn(t, s, s.OpenURL)
		ctx := context.Background()
		s.advance(2 * time.Hour) // past cookie_expiration (1h) and the access token
		if r := mcpPost(t, s.OpenURL, c.Token.AccessToken, initialize); r.StatusCode != http.StatusUnauthorized {
			t.Fatalf("access token after expiry: %d", r.StatusCode)
		}
		next, err := c.refresh(ctx)
		if err != nil {
			t.Fatalf("refresh after session expiry: %v", err)
		}
		if r := mcpPost(t, s.OpenURL, next.AccessToken, initialize); r.StatusCode != http.StatusOK {
			t.Fatalf("new access token: %d", r.StatusCode)
		}
		c.Token = next
		s.IDP.Disable(t, "alice")
		defer s.IDP.Enable(t, "alice")
		s.advance(2 * time.Hour)
		if _, err := c.refresh(ctx); !isInvalidGrant(err) {
			t.Fatalf("refresh with the account disabled at the provider: %v, want invalid_grant", err)
		}
	})
}

func isInvalidGrant(err error) bool {
	var re *oauth2.RetrieveError
	return errors.As(err, &re) && re.ErrorCode == "invalid_grant"
}

// verifyAssertion checks an X-Gateway-Assertion against the JWKS the gateway publishes on
// origin and returns its claims.
func verifyAssertion(t *testing.T, origin, raw string) map[string]any {
	t.Helper()
	resp, err := http.Get(origin + "/.well-known/gateway/jwks.json")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(body, &set); err != nil || len(set.Keys) == 0 {
		t.Fatalf("jwks: %v %s", err, body)
	}
	tok, err := jwt.ParseSigned(raw, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		t.Fatalf("assertion %q: %v", raw, err)
	}
	claims := map[string]any{}
	if err := tok.Claims(set.Keys[0].Key, &claims); err != nil {
		t.Fatalf("assertion signature: %v", err)
	}
	return claims
}
