package paths

import "testing"

func gatewayByMatches(path string) bool {
	for _, m := range GatewayMatches() {
		if m.Matches(path) {
			return true
		}
	}
	return false
}

func TestGatewayMatches_SelectExactlyIsGateway(t *testing.T) {
	t.Parallel()
	for _, p := range []string{
		"/", "/mcp", "/.gateway", "/.gateway/", "/.gateway/mcp/token", "/.gatewayx/y", "/x/.gateway/",
		"/.well-known/oauth-authorization-server", "/.well-known/oauth-authorization-server/mcp",
		"/.well-known/oauth-authorization-serverx", "/.well-known/oauth-protected-resource",
		"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource-x",
		"/.well-known/gateway/jwks.json", "/.well-known/gateway/jwks.json/x", "/.well-known/gateway/",
		"/.well-known/openid-configuration",
	} {
		if got, want := gatewayByMatches(p), IsGateway(p); got != want {
			t.Errorf("%q: matches %v, IsGateway %v", p, got, want)
		}
	}
	for _, m := range GatewayMatches() {
		if m.Prefix && m.Path[len(m.Path)-1] != '/' {
			t.Errorf("prefix %q does not end on a segment boundary", m.Path)
		}
	}
}

func FuzzGatewayMatches(f *testing.F) {
	for _, s := range []string{"/.gateway/x", "/.well-known/oauth-protected-resource/mcp", "/.well-known/gateway/jwks.json", "/mcp", "/.gateway"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if got, want := gatewayByMatches(p), IsGateway(p); got != want {
			t.Fatalf("%q: matches %v, IsGateway %v", p, got, want)
		}
	})
}
