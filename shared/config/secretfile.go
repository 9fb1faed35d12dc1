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
	if r.MCP == nil || r.MCP.Server == nil {
		return
	}
	key := "routes[" + strconv.Itoa(i) + "].mcp.server."
	if u := r.MCP.Server.UpstreamOAuth2; u != nil {
		readSecretFile(e, key+"upstream_oauth2.client_secret_file", u.ClientSecretFile, &u.ClientSecret)
	}
	if d := r.MCP.Server.UpstreamDiscovery; d != nil {
		readSecretFile(e, key+"upstream_discovery.client_secret_file", d.ClientSecretFile, &d.ClientSecret)
	}
}

// readSecretFile reads the client secret file at key (if set) into *secret, which must be
// empty.
func readSecretFile(e *Error, key, file string, secret *string) {
	if file == "" {
		return
	}
	if *secret != "" {
		e.add(key, "set either client_secret or client_secret_file, not both")
		return
	}
	b, err := os.ReadFile(file)
	switch {
	case err != nil:
		e.add(key, "cannot read: %v", err)
	case strings.TrimRight(string(b), "\r\n") == "":
		e.add(key, "file is empty")
	default:
		*secret = strings.TrimRight(string(b), "\r\n")
	}
}
