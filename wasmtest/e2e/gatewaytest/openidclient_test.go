package gatewaytest

import (
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
	for _, rt := range routes {
		for _, algorithm := range []string{"oidc", "oauth2"} {
			t.Run(rt.name+"/"+algorithm, func(t *testing.T) {
				res, err := harness.RunOpenIDClient(t, rt.url, algorithm, redirectURI)
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
