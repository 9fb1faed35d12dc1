package plugin

import (
	"strings"
	"testing"
)

// FuzzStepUpChallenge: whatever challenge an upstream sends, the gateway's step-up challenge
// names only the gateway's resource metadata, starts its scope with mcp, and carries no quote
// or control character the upstream chose.
func FuzzStepUpChallenge(f *testing.F) {
	f.Add(`Bearer error="insufficient_scope", scope="files:read files:write"`)
	f.Add(`Bearer error="insufficient_scope", scope="x\", resource_metadata=\"https://evil.example/prm"`)
	f.Add(`Basic realm="x", Bearer error=insufficient_scope, scope=a`)
	f.Add(`Bearer error="invalid_token"`)
	const rm = "https://up.example.com/.well-known/oauth-protected-resource/mcp"
	f.Fuzz(func(t *testing.T, upstream string) {
		v, ok := stepUpChallenge(upstream, rm)
		if !ok {
			return
		}
		prefix := `Bearer error="insufficient_scope", resource_metadata="` + rm + `", scope="mcp `
		if !strings.HasPrefix(v, prefix) || !strings.HasSuffix(v, `"`) {
			t.Fatalf("challenge %q", v)
		}
		scope := v[len(prefix) : len(v)-1]
		for i := 0; i < len(scope); i++ {
			if c := scope[i]; c == '"' || c == '\\' || c < 0x20 || c > 0x7e {
				t.Fatalf("scope %q carries %q", scope, c)
			}
		}
	})
}
