package config

import (
	"os"
	"strconv"
	"strings"
)

// resolveUpstreamSecretFile reads routes[i].mcp.server.upstream_oauth2.client_secret_file into
// client_secret, so that the secret can come from a mounted Kubernetes Secret rather than the
// configuration file (docs/istio.md).
func (c *Config) resolveUpstreamSecretFile(e *Error, i int) {
	r := &c.Routes[i]
	if r.MCP == nil || r.MCP.Server == nil || r.MCP.Server.UpstreamOAuth2 == nil {
		return
	}
	u := r.MCP.Server.UpstreamOAuth2
	if u.ClientSecretFile == "" {
		return
	}
	key := "routes[" + strconv.Itoa(i) + "].mcp.server.upstream_oauth2.client_secret_file"
	if u.ClientSecret != "" {
		e.add(key, "set either client_secret or client_secret_file, not both")
		return
	}
	b, err := os.ReadFile(u.ClientSecretFile)
	switch {
	case err != nil:
		e.add(key, "cannot read: %v", err)
	case strings.TrimRight(string(b), "\r\n") == "":
		e.add(key, "file is empty")
	default:
		u.ClientSecret = strings.TrimRight(string(b), "\r\n")
	}
}
