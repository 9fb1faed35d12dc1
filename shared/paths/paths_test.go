package paths

import "testing"

func TestIsGateway(t *testing.T) {
	t.Parallel()
	cases := map[string]bool{
		"/.gateway/mcp/routes": true,
		"/.gateway/":           true,
		"/.well-known/oauth-authorization-server":   true,
		"/.well-known/oauth-protected-resource":     true,
		"/.well-known/oauth-protected-resource/mcp": true,
		"/.well-known/gateway/jwks.json":            true,
		"/.gatewayx":                                false,
		"/mcp":                                      false,
		"/.well-known/oauth-authorization-serverx":  false,
		"/.well-known/openid-configuration":         true,
		"/.well-known/openid-configuration/mcp":     true,
		"/.well-known/openid-configurationx":        false,
		"/mcp/.gateway/mcp/routes":                  false,
		"":                                          false,
	}
	for p, want := range cases {
		if got := IsGateway(p); got != want {
			t.Errorf("IsGateway(%q) = %v, want %v", p, got, want)
		}
	}
}
