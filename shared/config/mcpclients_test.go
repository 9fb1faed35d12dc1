package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const secret32 = "0123456789abcdef0123456789abcdef"

func TestParse_MCPClients(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	secretFile := filepath.Join(dir, "secret")
	if err := os.WriteFile(secretFile, []byte(secret32+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	short := filepath.Join(dir, "short")
	if err := os.WriteFile(short, []byte("tiny"), 0o600); err != nil {
		t.Fatal(err)
	}
	yaml := validBase + `
mcp_clients:
  - client_id: desktop-app
    name: Desktop app
    application_type: native
    redirect_uris: ["http://127.0.0.1/callback", "com.example.app:/cb"]
  - client_id: ci-agent
    client_secret_file: ` + secretFile + `
    grant_types: [client_credentials]
    routes: [HTTPS://MCP.example.com/mcp/]
  - client_id: portal
    client_secret_env: PORTAL_SECRET
    token_endpoint_auth_method: client_secret_post
    redirect_uris: [https://portal.example.com/cb]
    consent: true
`
	env := func(k string) (string, bool) {
		if k == "PORTAL_SECRET" {
			return secret32 + "x", true
		}
		return "", false
	}
	c, err := Parse([]byte(yaml), env)
	if err != nil {
		t.Fatal(err)
	}
	d, ci, portal := c.MCPClients[0], c.MCPClients[1], c.MCPClients[2]
	if d.TokenEndpointAuthMethod != AuthNone || d.Confidential() || strings.Join(d.GrantTypes, ",") != "authorization_code,refresh_token" || d.Consent {
		t.Errorf("public client defaults: %+v", d)
	}
	if ci.SecretResolved != secret32 || ci.TokenEndpointAuthMethod != AuthClientSecretBasic || len(ci.RouteIDs) != 1 || ci.RouteIDs[0] != "https://mcp.example.com/mcp" {
		t.Errorf("service client: %+v", ci)
	}
	if portal.SecretResolved != secret32+"x" || portal.TokenEndpointAuthMethod != AuthClientSecretPost || !portal.Consent {
		t.Errorf("env secret: %+v", portal)
	}
	if got, ok := c.OAuthClientByID("portal"); !ok || got.ClientID != "portal" {
		t.Error("OAuthClientByID")
	}

	cases := []struct{ name, clients, want string }{
		{"missing client_id", `[{redirect_uris: [https://a.example/cb]}]`, "mcp_clients[0].client_id: is required"},
		{"client_id is a URL", `[{client_id: "https://x.example/c", redirect_uris: [https://a.example/cb]}]`, "mcp_clients[0].client_id: must be 1 to 128 characters"},
		{"duplicate", `[{client_id: a, redirect_uris: [https://a.example/cb]}, {client_id: a, redirect_uris: [https://a.example/cb]}]`, "mcp_clients[1].client_id: duplicates mcp_clients[0].client_id"},
		{"unknown key", `[{client_id: a, client_secret: x, redirect_uris: [https://a.example/cb]}]`, "mcp_clients[0].client_secret: unknown key"},
		{"both secrets", `[{client_id: a, client_secret_file: /x, client_secret_env: X, redirect_uris: [https://a.example/cb]}]`, "mcp_clients[0].client_secret_file: set either"},
		{"unreadable file", `[{client_id: a, client_secret_file: /nonexistent/secret, redirect_uris: [https://a.example/cb]}]`, "mcp_clients[0].client_secret_file: cannot read"},
		{"short secret", `[{client_id: a, client_secret_file: ` + short + `, redirect_uris: [https://a.example/cb]}]`, "mcp_clients[0].client_secret_file: the secret must be at least 32"},
		{"env unset", `[{client_id: a, client_secret_env: NOPE, redirect_uris: [https://a.example/cb]}]`, "mcp_clients[0].client_secret_env: environment variable NOPE is not set"},
		{"secret method without secret", `[{client_id: a, token_endpoint_auth_method: client_secret_basic, redirect_uris: [https://a.example/cb]}]`, "mcp_clients[0].token_endpoint_auth_method: client_secret_basic needs"},
		{"none with secret", `[{client_id: a, client_secret_file: ` + secretFile + `, token_endpoint_auth_method: none, redirect_uris: [https://a.example/cb]}]`, "mcp_clients[0].token_endpoint_auth_method: is none, but the client has a secret"},
		{"unknown method", `[{client_id: a, token_endpoint_auth_method: private_key_jwt, redirect_uris: [https://a.example/cb]}]`, "mcp_clients[0].token_endpoint_auth_method: must be"},
		{"bad redirect", `[{client_id: a, redirect_uris: ["http://a.example/cb"]}]`, "mcp_clients[0].redirect_uris[0]: http redirect URIs are allowed only for loopback"},
		{"web with app scheme", `[{client_id: a, application_type: web, redirect_uris: ["com.example.app:/cb"]}]`, "mcp_clients[0].redirect_uris[0]: a web application's redirect URIs must be https"},
		{"native with https", `[{client_id: a, application_type: native, redirect_uris: ["https://a.example/cb"]}]`, "mcp_clients[0].redirect_uris[0]: a native application's"},
		{"unknown application_type", `[{client_id: a, application_type: tv, redirect_uris: ["https://a.example/cb"]}]`, "mcp_clients[0].application_type: must be web or native"},
		{"code without redirect", `[{client_id: a}]`, "mcp_clients[0].redirect_uris: is required with the authorization_code grant"},
		{"unknown grant", `[{client_id: a, grant_types: [password], redirect_uris: [https://a.example/cb]}]`, "mcp_clients[0].grant_types[0]: must be authorization_code"},
		{"public service", `[{client_id: a, grant_types: [client_credentials], routes: [https://mcp.example.com/mcp]}]`, "mcp_clients[0].grant_types[0]: client_credentials needs a confidential client"},
		{"service without routes", `[{client_id: a, client_secret_file: ` + secretFile + `, grant_types: [client_credentials]}]`, "mcp_clients[0].routes: is required with the client_credentials grant"},
		{"refresh alone", `[{client_id: a, client_secret_file: ` + secretFile + `, grant_types: [client_credentials, refresh_token], routes: [https://mcp.example.com/mcp]}]`, "mcp_clients[0].grant_types: refresh_token needs authorization_code"},
		{"route not a server", `[{client_id: a, redirect_uris: [https://a.example/cb], routes: [https://mcp.example.com/other]}]`, "mcp_clients[0].routes[0]: is not the from of an mcp.server route"},
		{"service on an upstream_oauth2 route", `[{client_id: a, client_secret_file: ` + secretFile + `, grant_types: [client_credentials], routes: [https://up.example.com/mcp]}]`, "mcp_clients[0].routes[0]: has upstream_oauth2"},
		{"route malformed", `[{client_id: a, redirect_uris: [https://a.example/cb], routes: ["mcp.example.com"]}]`, "mcp_clients[0].routes[0]: want an absolute URL"},
		{"name with control characters", "[{client_id: a, name: \"a\\u202eb\", redirect_uris: [https://a.example/cb]}]", "mcp_clients[0].name: must be at most 200 characters"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			base := validBase + `  - from: https://up.example.com/mcp
    to: http://up.internal/mcp
    mcp: {server: {upstream_oauth2: {client_id: c, endpoint: {auth_url: "https://up.example/auth", token_url: "https://up.example/token"}}}}
`
			_, err := Parse([]byte(base+"mcp_clients: "+tc.clients+"\n"), noEnv)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
	t.Run("needs runtime_flags.mcp", func(t *testing.T) {
		y := strings.Replace(strings.Replace(validBase, "runtime_flags: {mcp: true}", "", 1), "    mcp: {server: {}}\n", "", 1)
		_, err := Parse([]byte(y+"mcp_clients: [{client_id: a, redirect_uris: [https://a.example/cb]}]\n"), noEnv)
		if err == nil || !strings.Contains(err.Error(), "mcp_clients: requires runtime_flags.mcp: true") {
			t.Fatalf("error %v", err)
		}
	})
}
