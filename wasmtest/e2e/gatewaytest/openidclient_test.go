package gatewaytest

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/mcpmesh/gateway/wasmtest/e2e/harness"
)

// TestOpenIDClient_MCPURLAsResource: a strict OAuth 2.1 client (openid-client 6 from npm)
// sends the MCP URL it was given as the RFC 8707 resource, with both of its discovery
// algorithms (OpenID Connect discovery and RFC 8414), on a route whose from is a bare origin
// (the MCP URL is deeper than the route's from: the case that used to get invalid_target) and
// on a route with a path. Each signs in, initializes, refreshes and initializes again, and its
// token is refused at the other route.
func TestOpenIDClient_MCPURLAsResource(t *testing.T) {
	s := startStackWith(t, stackOptions{BareOrigin: true})
	bareMCP := s.BareURL + "/mcp"
	routes := []struct {
		name, url, other, wantPRM, wantMetadataURL string
	}{
		{"bare-origin route", bareMCP, s.OpenURL, s.BareURL, s.BareURL + "/.well-known/oauth-protected-resource"},
		{"path route", s.OpenURL, bareMCP, s.OpenURL, s.MCPOrigin + "/.well-known/oauth-protected-resource/mcp"},
	}
	// Discovery through the gateway: the plain forms answer on both hosts, the path-inserted
	// ones are a quick JSON 404 (the issuer has no path), never the upstream's page.
	for _, origin := range []string{s.BareURL, s.MCPOrigin} {
		for path, want := range map[string]int{
			"/.well-known/oauth-authorization-server":      200,
			"/.well-known/openid-configuration":            200,
			"/.well-known/oauth-authorization-server/mcp":  404,
			"/.well-known/openid-configuration/mcp":        404,
			"/.well-known/oauth-protected-resource/mcp/x/": 200,
		} {
			resp, err := http.Get(origin + path)
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			derr := json.NewDecoder(resp.Body).Decode(&m)
			resp.Body.Close()
			if resp.StatusCode != want || resp.Header.Get("Content-Type") != "application/json" || derr != nil {
				t.Errorf("%s%s: %d %q (%v), want %d JSON", origin, path, resp.StatusCode, resp.Header.Get("Content-Type"), derr, want)
			}
			if want == 200 && strings.Contains(path, "protected-resource") && m["resource"] != origin+"/mcp/x" {
				t.Errorf("%s%s names %v", origin, path, m["resource"])
			}
		}
	}
	for _, rt := range routes {
		for _, algorithm := range []string{"oidc", "oauth2"} {
			t.Run(rt.name+"/"+algorithm, func(t *testing.T) {
				res, err := harness.RunOpenIDClientWith(t, harness.OpenIDClientOptions{URL: rt.url, Algorithm: algorithm, RedirectURI: redirectURI, Tool: "test_simple_text"})
				if err != nil {
					t.Fatalf("%v\nresult %+v\nbrowser: %v", err, res, res.Browser)
				}
				if res.ResourceMetadata != rt.wantMetadataURL || res.PRMResource != rt.wantPRM {
					t.Errorf("challenge names %s whose resource is %s; want %s naming %s", res.ResourceMetadata, res.PRMResource, rt.wantMetadataURL, rt.wantPRM)
				}
				if !strings.Contains(res.Challenge, `scope="mcp"`) || res.ScopeRequested != "mcp" {
					t.Errorf("challenge %q, scope requested %q: want the challenge's scope mcp", res.Challenge, res.ScopeRequested)
				}
				if res.TokenScope != "mcp" || res.RefreshScope != "mcp" {
					t.Errorf("token scope %q, after refresh %q; want exactly mcp", res.TokenScope, res.RefreshScope)
				}
				if res.Call == nil || res.Call.Text == "" || len(res.Tools) == 0 {
					t.Errorf("tools/list %v, tools/call %+v", res.Tools, res.Call)
				}
				if res.ResourceSent != rt.url || res.MCPStatus != 200 || res.MCPStatusAfterRefresh != 200 {
					t.Errorf("result %+v", res)
				}
				// The token is bound to its route: the other route refuses it.
				r := mcpPost(t, rt.other, res.AccessToken, initialize)
				if r.StatusCode != http.StatusUnauthorized || !strings.Contains(r.Header.Get("WWW-Authenticate"), "invalid_token") {
					t.Errorf("token for %s at %s: status %d %q", rt.url, rt.other, r.StatusCode, r.Header.Get("WWW-Authenticate"))
				}
			})
		}
	}
}

// TestOpenIDClient_DeniedToolCall: the openid-client flow reports a tool call the route's
// policy refuses (the client matrix uses it), and the permitted one beside it succeeds.
func TestOpenIDClient_DeniedToolCall(t *testing.T) {
	s := startStack(t)
	res, err := harness.RunOpenIDClientWith(t, harness.OpenIDClientOptions{URL: s.RestrictedURL, Algorithm: "oauth2", RedirectURI: redirectURI,
		Tool: "test_simple_text", DeniedTool: "test_error_handling"})
	if err != nil {
		t.Fatalf("%v\nresult %+v", err, res)
	}
	if res.Call == nil || res.Call.IsError || res.Denied == nil {
		t.Fatalf("result %+v", res)
	}
	if d := res.Denied; d.Status == 200 && !d.IsError && d.Error == "" {
		t.Errorf("the denied tool call succeeded: %+v", d)
	}
	if !strings.Contains(res.Denied.Text+res.Denied.Error, "test_error_handling") {
		t.Errorf("the denial does not name the tool: %+v", res.Denied)
	}
}

// TestOfficialSDKs_BareOriginRoute: the official TypeScript and Go SDK clients sign in, call a
// tool and refresh on a route whose from is a bare origin, at an MCP URL deeper than it (the
// challenge names the host-level metadata, whose resource is the origin), and the token they
// get is bound to it (TestOpenIDClient_MCPURLAsResource checks the binding).
func TestOfficialSDKs_BareOriginRoute(t *testing.T) {
	s := startStackWith(t, stackOptions{BareOrigin: true})
	mcpURL := s.BareURL + "/mcp"
	t.Run("TypeScript SDK", func(t *testing.T) {
		res, err := harness.RunTSClient(t, harness.ClientOptions{URL: mcpURL, Tool: "test_simple_text"})
		if err != nil {
			t.Fatalf("%v\nbrowser: %v", err, res.Browser)
		}
		if !res.Refreshed || res.Call == nil || res.Call.IsError || res.Scope != "mcp" {
			t.Fatalf("result %+v", res)
		}
	})
	t.Run("Go SDK", func(t *testing.T) {
		res, err := harness.RunGoClient(t, harness.ClientOptions{URL: mcpURL, Tool: "test_simple_text"})
		if err != nil {
			t.Fatalf("%v\nbrowser: %v", err, res.Browser)
		}
		if !res.Refreshed || res.Call == nil || res.Call.IsError {
			t.Fatalf("result %+v", res)
		}
	})
}
