package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParse_UpstreamClientSecretFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(dir, "secret")
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(good, []byte("upstream-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	route := func(secretLines string) string {
		return validBase[:strings.Index(validBase, "routes:")] + `routes:
  - from: https://mcp.example.com/up
    to: http://mcp.internal:8080
    policy: {allow: {and: [{authenticated_user: true}]}}
    mcp:
      server:
        upstream_oauth2:
          client_id: up
` + secretLines + `          endpoint: {auth_url: https://up.example.com/authorize, token_url: https://up.example.com/token}
`
	}
	c, err := Parse([]byte(route("          client_secret_file: "+good+"\n")), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Routes[0].MCP.Server.UpstreamOAuth2.ClientSecret; got != "upstream-secret" {
		t.Errorf("client secret = %q, want the file's content", got)
	}
	for name, tc := range map[string]struct{ lines, want string }{
		"both":    {"          client_secret: x\n          client_secret_file: " + good + "\n", "routes[0].mcp.server.upstream_oauth2.client_secret_file: set either client_secret or client_secret_file"},
		"missing": {"          client_secret_file: " + filepath.Join(dir, "nope") + "\n", "routes[0].mcp.server.upstream_oauth2.client_secret_file: cannot read"},
		"empty":   {"          client_secret_file: " + empty + "\n", "routes[0].mcp.server.upstream_oauth2.client_secret_file: file is empty"},
	} {
		_, err := Parse([]byte(route(tc.lines)), nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", name, err, tc.want)
		}
	}
}
