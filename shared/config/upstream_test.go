package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// upstreamRoutes returns a routes list with upstream_oauth2 blocks (YAML flow mappings).
func upstreamRoutes(blocks ...string) string {
	var b strings.Builder
	b.WriteString("routes:\n")
	for i, blk := range blocks {
		b.WriteString("  - from: https://mcp.example.com/r" + string(rune('0'+i)) + "\n")
		b.WriteString("    to: http://mcp.internal/mcp\n")
		b.WriteString("    mcp: {server: {upstream_oauth2: " + blk + "}}\n")
	}
	return b.String()
}

func TestParse_UpstreamOAuth2(t *testing.T) {
	t.Parallel()
	base := validBase[:strings.Index(validBase, "routes:")]
	endpoint := `endpoint: {auth_url: "https://up.example.com/authorize", token_url: "https://up.example.com/token"}`
	secretFile := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secretFile, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(t.TempDir(), "empty")
	_ = os.WriteFile(empty, []byte("\n"), 0o600)
	cases := []struct {
		name, routes, want string
	}{
		{"valid", upstreamRoutes(`{client_id: c, client_secret: s, ` + endpoint + `}`), ""},
		{"public client alone on its host", upstreamRoutes(`{client_id: c, ` + endpoint + `}`), ""},
		{"secret file", upstreamRoutes(`{client_id: c, client_secret_file: ` + secretFile + `, ` + endpoint + `}`), ""},
		{"no client_id", upstreamRoutes(`{client_secret: s, ` + endpoint + `}`), "routes[0].mcp.server.upstream_oauth2.client_id: is required"},
		{"no auth_url", upstreamRoutes(`{client_id: c, endpoint: {token_url: "https://up.example.com/token"}}`), "routes[0].mcp.server.upstream_oauth2.endpoint.auth_url: is required"},
		{"no token_url", upstreamRoutes(`{client_id: c, endpoint: {auth_url: "https://up.example.com/a"}}`), "routes[0].mcp.server.upstream_oauth2.endpoint.token_url: is required"},
		{"plain http token_url", upstreamRoutes(`{client_id: c, endpoint: {auth_url: "https://up.example.com/a", token_url: "http://up.example.com/t"}}`), "routes[0].mcp.server.upstream_oauth2.endpoint.token_url: plain http"},
		{"bad auth_style", upstreamRoutes(`{client_id: c, endpoint: {auth_url: "https://up.example.com/a", token_url: "https://up.example.com/t", auth_style: basic}}`), "routes[0].mcp.server.upstream_oauth2.endpoint.auth_style: must be header or params"},
		{"both secrets", upstreamRoutes(`{client_id: c, client_secret: s, client_secret_file: ` + secretFile + `, ` + endpoint + `}`), "routes[0].mcp.server.upstream_oauth2.client_secret_file: set either"},
		{"unreadable secret file", upstreamRoutes(`{client_id: c, client_secret_file: /nonexistent/x, ` + endpoint + `}`), "routes[0].mcp.server.upstream_oauth2.client_secret_file: cannot read"},
		{"empty secret file", upstreamRoutes(`{client_id: c, client_secret_file: ` + empty + `, ` + endpoint + `}`), "routes[0].mcp.server.upstream_oauth2.client_secret_file: file is empty"},
		{"bad scope", upstreamRoutes(`{client_id: c, client_secret: s, scopes: ["a b"], ` + endpoint + `}`), "routes[0].mcp.server.upstream_oauth2.scopes[0]: invalid scope"},
		{"bad issuer", upstreamRoutes(`{client_id: c, client_secret: s, issuer: "http://up.example.com", ` + endpoint + `}`), "routes[0].mcp.server.upstream_oauth2.issuer: plain http"},
		{"unknown key", upstreamRoutes(`{client_id: c, client_secret: s, tenant: x, ` + endpoint + `}`), "routes[0].mcp.server.upstream_oauth2.tenant: unknown key"},
		{"public client shares its host", upstreamRoutes(`{client_id: c, client_secret: s, `+endpoint+`}`, `{client_id: d, `+endpoint+`}`), "routes[1].mcp.server.upstream_oauth2.client_secret: is required: a public upstream client"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := Parse([]byte(base+tc.routes), noEnv)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
			_ = c
		})
	}
	c, err := Parse([]byte(base+upstreamRoutes(`{client_id: c, client_secret_file: `+secretFile+`, `+endpoint+`}`)), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Routes[0].MCP.Server.UpstreamOAuth2.ClientSecret; got != "from-file" {
		t.Errorf("resolved secret %q, want the file's content", got)
	}
}

// discoveryRoutes returns a routes list with one upstream_discovery route to `to`.
func discoveryRoutes(to, block string) string {
	return "routes:\n  - from: https://remote.example.com\n    to: " + to + "\n    mcp: {server: {upstream_discovery: " + block + "}}\n"
}

func TestParse_UpstreamDiscovery(t *testing.T) {
	t.Parallel()
	base := validBase[:strings.Index(validBase, "routes:")]
	allow := "mcp_allowed_upstream_domains: [auth.vendor.example, \"*.vendor.example\"]\n"
	secretFile := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secretFile, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	endpoint := `endpoint: {auth_url: "https://up.example.com/authorize", token_url: "https://up.example.com/token"}`
	vendor := "https://mcp.vendor.example/mcp"
	cases := []struct {
		name, cfg, want string
	}{
		{"empty block", allow + discoveryRoutes(vendor, "{}"), ""},
		{"pre-registered", allow + discoveryRoutes(vendor, "{client_id: c, client_secret_file: "+secretFile+", scopes: [read]}"), ""},
		{"no allowlist", discoveryRoutes(vendor, "{}"), "mcp_allowed_upstream_domains: is required when a route has upstream_discovery (routes[0])"},
		{"to not allowed", allow + discoveryRoutes("https://mcp.elsewhere.example/mcp", "{}"), `routes[0].to: host "mcp.elsewhere.example" must match mcp_allowed_upstream_domains`},
		{"bare domain is not a subdomain", allow + discoveryRoutes("https://vendor.example/mcp", "{}"), `routes[0].to: host "vendor.example" must match`},
		{"both upstream blocks", allow + "routes:\n  - from: https://remote.example.com\n    to: " + vendor + "\n    mcp: {server: {upstream_discovery: {}, upstream_oauth2: {client_id: c, client_secret: s, " + endpoint + "}}}\n", "routes[0].mcp.server.upstream_discovery: set either upstream_oauth2"},
		{"secret without client_id", allow + discoveryRoutes(vendor, "{client_secret: s}"), "routes[0].mcp.server.upstream_discovery.client_id: is required with a client secret"},
		{"both secrets", allow + discoveryRoutes(vendor, "{client_id: c, client_secret: s, client_secret_file: "+secretFile+"}"), "routes[0].mcp.server.upstream_discovery.client_secret_file: set either"},
		{"bad scope", allow + discoveryRoutes(vendor, `{scopes: ["a b"]}`), "routes[0].mcp.server.upstream_discovery.scopes[0]: invalid scope"},
		{"unknown key", allow + discoveryRoutes(vendor, "{issuers: x}"), "routes[0].mcp.server.upstream_discovery.issuers: unknown key"},
		{"plain http issuer", allow + discoveryRoutes(vendor, `{issuer: "http://auth.vendor.example"}`), "routes[0].mcp.server.upstream_discovery.issuer: plain http"},
		{"issuer not allowed", allow + discoveryRoutes(vendor, `{issuer: "https://auth.other.example"}`), "routes[0].mcp.server.upstream_discovery.issuer: host \"auth.other.example\" must match mcp_allowed_upstream_domains"},
		{"bad pattern", "mcp_allowed_upstream_domains: [\"https://vendor.example\"]\n" + discoveryRoutes(vendor, "{}"), "mcp_allowed_upstream_domains[0]: want a domain"},
		// Every upstream route of a host shares one callback URL: a discovered authorization
		// server (chosen by the upstream, not the operator) could otherwise redeem a code meant
		// for a public client of another route of the host (an OAuth mix-up).
		{"public upstream_oauth2 client beside a discovery route", allow + discoveryRoutes(vendor, "{}") +
			"  - from: https://remote.example.com/gh\n    to: http://gh.internal/mcp\n    mcp: {server: {upstream_oauth2: {client_id: c, " + endpoint + "}}}\n",
			"routes[1].mcp.server.upstream_oauth2.client_secret: is required: a public upstream client"},
		{"public pre-registered discovery client beside another upstream route", allow + discoveryRoutes(vendor, "{client_id: c}") +
			"  - from: https://remote.example.com/gh\n    to: http://gh.internal/mcp\n    mcp: {server: {upstream_oauth2: {client_id: c, client_secret: s, " + endpoint + "}}}\n",
			"routes[0].mcp.server.upstream_discovery.client_secret: is required: a public upstream client"},
		{"public pre-registered discovery client alone on its host", allow + discoveryRoutes(vendor, "{client_id: c}"), ""},
		{"confidential clients share a host", allow + discoveryRoutes(vendor, "{}") +
			"  - from: https://remote.example.com/gh\n    to: http://gh.internal/mcp\n    mcp: {server: {upstream_oauth2: {client_id: c, client_secret: s, " + endpoint + "}}}\n", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(base+tc.cfg), noEnv)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
	c, err := Parse([]byte(base+allow+discoveryRoutes(vendor, "{client_id: c, client_secret_file: "+secretFile+"}")), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	s := c.Routes[0].MCP.Server
	if got := s.UpstreamDiscovery.ClientSecret; got != "from-file" {
		t.Errorf("resolved secret %q, want the file's content", got)
	}
	if !s.HasUpstream() {
		t.Error("an upstream_discovery route does not send an Internal Token upstream")
	}
	pc := c.PluginConfig()
	if len(pc.Routes) != 1 || !pc.Routes[0].UpstreamOAuth2 {
		t.Errorf("the filter is not told to inject the TI: %+v", pc.Routes)
	}
}
