package assertion

import (
	"os/exec"
	"strings"
	"testing"
)

// The packages an MCP server imports must not pull in the token service or its libraries.
func TestImports_NoTokenServiceDependencies(t *testing.T) {
	tests := []struct {
		pkg       string
		forbidden []string
		stdOnly   bool
	}{
		{pkg: ".", stdOnly: true},
		{pkg: "./mcpauth", forbidden: []string{"github.com/mcpmesh/gateway/tokensvc", "github.com/mcpmesh/gateway/shared", "github.com/go-jose/"}},
	}
	for _, tt := range tests {
		out, err := exec.Command("go", "list", "-deps", tt.pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", tt.pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			if strings.HasPrefix(dep, "github.com/mcpmesh/gateway/sdk/go/") {
				continue
			}
			if tt.stdOnly && strings.Contains(strings.SplitN(dep, "/", 2)[0], ".") {
				t.Errorf("%s imports %s (only the standard library is allowed)", tt.pkg, dep)
			}
			for _, f := range tt.forbidden {
				if strings.HasPrefix(dep, f) {
					t.Errorf("%s imports %s", tt.pkg, dep)
				}
			}
		}
	}
}
