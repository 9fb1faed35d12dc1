package server

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/shared/paths"
)

// TestDiscovery_EveryURLClientsTry follows the discovery orders of the MCP authorization
// specification (RFC 9728, then RFC 8414 and OpenID Connect discovery, with and without path
// insertion) on every route host: each ends at the host's authorization server metadata or at
// a quick JSON 404, never at an HTML page.
func TestDiscovery_EveryURLClientsTry(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	type answer struct {
		status int
		issuer string // for 200: the metadata's issuer
	}
	cases := []struct {
		url  string
		want answer
	}{
		// The issuer of an MCP server host is its origin (no path): the plain forms answer.
		{"https://mcp.example.com" + paths.AuthorizationServerMetadata, answer{200, "https://mcp.example.com"}},
		{"https://mcp.example.com" + paths.OpenIDConfiguration, answer{200, "https://mcp.example.com"}},
		{"https://gh.example.com" + paths.OpenIDConfiguration, answer{200, "https://gh.example.com"}},
		// Path insertion with the MCP URL's path names an issuer with a path, which is not
		// this host's: 404 so that the client goes on to the next URL.
		{"https://mcp.example.com" + paths.AuthorizationServerMetadata + "/mcp", answer{404, ""}},
		{"https://mcp.example.com" + paths.OpenIDConfiguration + "/mcp", answer{404, ""}},
		{"https://mcp.example.com" + paths.OpenIDConfiguration + "/", answer{404, ""}},
		// Hosts without MCP servers serve no authorization server.
		{"https://app.example.com" + paths.OpenIDConfiguration, answer{404, ""}},
		{"https://plain.example.com" + paths.OpenIDConfiguration, answer{404, ""}},
		{"https://auth.example.com" + paths.OpenIDConfiguration, answer{404, ""}},
		{"https://plain.example.com" + paths.AuthorizationServerMetadata, answer{404, ""}},
	}
	for _, tc := range cases {
		t.Run(tc.url, func(t *testing.T) {
			start := time.Now()
			resp := e.public(http.MethodGet, tc.url, nil)
			if d := time.Since(start); d > time.Second {
				t.Errorf("answered after %v", d)
			}
			if resp.StatusCode != tc.want.status || resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("status %d Content-Type %q, want %d application/json", resp.StatusCode, resp.Header.Get("Content-Type"), tc.want.status)
			}
			var m struct {
				Issuer        string   `json:"issuer"`
				TokenEndpoint string   `json:"token_endpoint"`
				Scopes        []string `json:"scopes_supported"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
				t.Fatal(err)
			}
			if tc.want.status == 200 && (m.Issuer != tc.want.issuer || m.TokenEndpoint != tc.want.issuer+paths.Token) {
				t.Errorf("metadata %+v", m)
			}
		})
	}
}
