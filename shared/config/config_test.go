package config

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpmesh/gateway/shared/pluginconf"
)

const validBase = `
runtime_flags: {mcp: true}
authenticate_service_url: https://auth.example.com
shared_secret: ZGVtby1vbmx5LXNoYXJlZC1zZWNyZXQtMzItYnl0ZXM=
cookie_secret: ZGVtby1vbmx5LWNvb2tpZS1zZWNyZXQtMzItYnl0ZXM=
idp_provider: oidc
idp_provider_url: https://idp.example.com
idp_client_id: gw
idp_client_secret: s3cret
routes:
  - from: https://mcp.example.com/mcp
    to: http://mcp.internal:8080/mcp
    mcp: {server: {}}
`

func noEnv(string) (string, bool) { return "", false }

func TestParse_ExampleConfigIsValid(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../examples/gateway.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := ParseDir(b, noEnv, "../../examples") // its lock file is beside it
	if err != nil {
		t.Fatalf("examples/gateway.yaml: %v", err)
	}
	if got := c.Routes[0].MCP.Server.MaxRequestBytes; got != 4096 {
		t.Errorf("default max_request_bytes = %d, want 4096", got)
	}
	if c.Routes[1].MCP.Client == nil {
		t.Error("mcp.client: {} did not mark a client route")
	}
}

func TestParse_ErrorsNameTheKey(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, yaml, want string
	}{
		{"unknown top-level key", validBase + "bogus: 1\n", "bogus: unknown key"},
		{"unknown nested key", strings.Replace(validBase, "mcp: {server: {}}", "mcp: {server: {max_bytes: 5}}", 1), "routes[0].mcp.server.max_bytes: unknown key"},
		{"wrong type", strings.Replace(validBase, "mcp: {server: {}}", "mcp: {server: {max_request_bytes: lots}}", 1), "routes[0].mcp.server.max_request_bytes:"},
		{"server and client", strings.Replace(validBase, "mcp: {server: {}}", "mcp: {server: {}, client: {}}", 1), "routes[0].mcp: set either server or client, not both"},
		{"mcp without flag", strings.Replace(validBase, "runtime_flags: {mcp: true}", "runtime_flags: {mcp: false}", 1), "routes[0].mcp: requires runtime_flags.mcp: true"},
		{"both secrets", validBase + "idp_client_secret_file: /etc/x\n", "idp_client_secret_file: set either"},
		{"bad provider", strings.Replace(validBase, "idp_provider: oidc", "idp_provider: keycloak", 1), "idp_provider: must be one of"},
		{"hosted provider", strings.Replace(validBase, "idp_provider: oidc", "idp_provider: hosted", 1), "idp_provider: the hosted authenticate service is not available"},
		{"http non-loopback", strings.Replace(validBase, "https://mcp.example.com/mcp", "http://mcp.example.com/mcp", 1), "routes[0].from: plain http is accepted only for loopback"},
		{"short secret", strings.Replace(validBase, "ZGVtby1vbmx5LXNoYXJlZC1zZWNyZXQtMzItYnl0ZXM=", "c2hvcnQ=", 1), "shared_secret: want base64 of exactly 32 bytes"},
		{"auth_style", strings.Replace(validBase, "mcp: {server: {}}", "mcp: {server: {upstream_oauth2: {client_id: a, endpoint: {auth_url: 'https://u/a', token_url: 'https://u/t', auth_style: basic}}}}", 1), "routes[0].mcp.server.upstream_oauth2.endpoint.auth_style: must be header or params"},
		{"domain pattern", validBase + "mcp_allowed_client_id_domains: ['https://x.com']\n", "mcp_allowed_client_id_domains[0]:"},
		{"duplicate route", validBase + "  - from: https://MCP.example.com:443/mcp/\n    to: http://x\n", "routes[1].from: duplicates routes[0].from"},
		{"postgres without dsn", validBase + "storage: {type: postgres}\n", "storage.dsn: is required"},
		{"path in authenticate url", strings.Replace(validBase, "https://auth.example.com", "https://auth.example.com/login", 1), "authenticate_service_url: must be an origin"},
		{"wildcard host", strings.Replace(validBase, "https://mcp.example.com/mcp", "https://*.example.com/mcp", 1), "routes[0].from: wildcard hosts are not supported"},
		{"port with leading zero", strings.Replace(validBase, "https://mcp.example.com/mcp", "https://mcp.example.com:0443/mcp", 1), "routes[0].from: invalid port"},
		{"not yaml", "routes: [\n", "not valid YAML"},
		{"bad policy operator", strings.Replace(validBase, "mcp: {server: {}}", "mcp: {server: {}}\n    policy: {deny: {and: [{mcp_tool: {regex: x}}]}}", 1), "routes[0]: policy.deny.and[0].mcp_tool"},
		{"negative proxy hops", validBase + "token_service: {trusted_proxy_hops: -1}\n", "token_service.trusted_proxy_hops: must be between 0 and 10"},
		{"too many proxy hops", validBase + "token_service: {trusted_proxy_hops: 11}\n", "token_service.trusted_proxy_hops: must be between 0 and 10"},
		{"proxy hops not a number", validBase + "token_service: {trusted_proxy_hops: one}\n", "token_service.trusted_proxy_hops:"},
		{"unknown log field", validBase + "authorize_log_fields: [request-id, password]\n", "authorize_log_fields:"},
		{"empty redaction key", validBase + "authorize_log_redact: [password, '']\n", "authorize_log_redact: authorize_log_redact[1]: invalid redaction entry"},
		{"malformed redaction path", validBase + "authorize_log_redact: ['$.a..b']\n", "authorize_log_redact: authorize_log_redact[0]"},
		{"negative parameter bound", validBase + "authorize_log_max_parameter_bytes: -2\n", "authorize_log_max_parameter_bytes: must be -1"},
		{"huge parameter bound", validBase + "authorize_log_max_parameter_bytes: 2000000\n", "authorize_log_max_parameter_bytes: must be -1"},
		{"path traversal in from", strings.Replace(validBase, "https://mcp.example.com/mcp", "https://mcp.example.com/a/../mcp", 1), "routes[0].from: path must be a plain path"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(tc.yaml), noEnv)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v\nwant it to contain %q", err, tc.want)
			}
		})
	}
}

func TestParse_TrustedProxyHops(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		yaml string
		want int
	}{
		{validBase, 0},
		{validBase + "token_service: {trusted_proxy_hops: 2}\n", 2},
	} {
		c, err := Parse([]byte(tc.yaml), noEnv)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.TokenService.TrustedProxyHops; got != tc.want {
			t.Errorf("trusted_proxy_hops = %d, want %d", got, tc.want)
		}
	}
}

func TestParse_EnvironmentOverridesFile(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		"IDP_CLIENT_ID":      "from-env",
		"IDP_SCOPES":         "openid, email",
		"IDP_REQUEST_PARAMS": `{"prompt":"login"}`,
	}
	c, err := Parse([]byte(validBase), func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	if c.IDPClientID != "from-env" {
		t.Errorf("IDPClientID = %q", c.IDPClientID)
	}
	if got := strings.Join(c.EffectiveIDPScopes(), " "); got != "openid email" {
		t.Errorf("scopes = %q", got)
	}
	if c.EffectiveIDPRequestParams()["prompt"] != "login" {
		t.Errorf("params = %v", c.EffectiveIDPRequestParams())
	}
	_, err = Parse([]byte(validBase), func(k string) (string, bool) {
		if k == "IDP_REQUEST_PARAMS" {
			return "not json", true
		}
		return "", false
	})
	if err == nil || !strings.Contains(err.Error(), "IDP_REQUEST_PARAMS") {
		t.Errorf("bad IDP_REQUEST_PARAMS: err = %v", err)
	}
}

func TestIDPDefaults(t *testing.T) {
	t.Parallel()
	cases := []struct {
		provider string
		params   map[string]string
		want     map[string]string
		scopes   string
	}{
		{"google", nil, map[string]string{"prompt": "select_account consent"}, "openid profile email offline_access"},
		{"azure", nil, map[string]string{"prompt": "select_account"}, "openid profile email offline_access"},
		{"google", map[string]string{}, map[string]string{}, "openid profile email offline_access"},
		{"google", map[string]string{"hd": "x.com"}, map[string]string{"hd": "x.com"}, "openid profile email offline_access"},
		{"apple", map[string]string{"x": "y"}, map[string]string{"response_mode": "form_post", "x": "y"}, "openid profile email offline_access"},
		{"cognito", nil, map[string]string{}, "openid profile email"},
	}
	for _, tc := range cases {
		c := &Config{IDPProvider: tc.provider, IDPRequestParams: tc.params}
		got := c.EffectiveIDPRequestParams()
		if len(got) != len(tc.want) {
			t.Errorf("%s %v: params = %v, want %v", tc.provider, tc.params, got, tc.want)
		}
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("%s: params[%s] = %q, want %q", tc.provider, k, got[k], v)
			}
		}
		if s := strings.Join(c.EffectiveIDPScopes(), " "); s != tc.scopes {
			t.Errorf("%s scopes = %q, want %q", tc.provider, s, tc.scopes)
		}
	}
}

func TestParse_SecretFile(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(p, []byte("file-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	y := strings.Replace(validBase, "idp_client_secret: s3cret", "idp_client_secret_file: "+p, 1)
	c, err := Parse([]byte(y), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if c.IDPClientSecretResolved != "file-secret" {
		t.Errorf("resolved secret = %q", c.IDPClientSecretResolved)
	}
}

func TestPluginConfig_OrdersRoutesAndDerivesKey(t *testing.T) {
	t.Parallel()
	y := validBase + "  - from: https://mcp.example.com/mcp/admin\n    to: http://x\n    mcp: {server: {max_request_bytes: 100}}\n"
	c, err := Parse([]byte(y), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	pc := c.PluginConfig()
	if err := pc.Validate(); err != nil {
		t.Fatal(err)
	}
	if pc.Routes[0].PathPrefix != "/mcp/admin" || pc.Routes[0].MaxRequestBytes != 100 {
		t.Errorf("first route = %+v, want the longer prefix first", pc.Routes[0])
	}
	if pc.Routes[1].ID != "https://mcp.example.com/mcp" || pc.Routes[1].Kind != "server" {
		t.Errorf("second route = %+v", pc.Routes[1])
	}
	if pc.FilterKey == "" || pc.FilterKey == c.SharedSecret || pc.FilterKey != c.FilterKey() {
		t.Errorf("filter key %q not derived", pc.FilterKey)
	}
}

// TestParse_ProviderTableDecidesWhatIsRequired: a provider whose issuer depends on the tenant
// needs idp_provider_url (azure among them), one with a well-known issuer does not; what
// passes validation is what the token service can start with.
func TestParse_ProviderTableDecidesWhatIsRequired(t *testing.T) {
	t.Parallel()
	noURL := strings.Replace(validBase, "idp_provider_url: https://idp.example.com\n", "", 1)
	for _, name := range ProviderNames() {
		p, _ := LookupProvider(name)
		_, err := Parse([]byte(strings.Replace(noURL, "idp_provider: oidc", "idp_provider: "+name, 1)), nil)
		switch {
		case p.Unavailable != "":
			if err == nil || !strings.Contains(err.Error(), "idp_provider: ") {
				t.Errorf("%s: err = %v, want idp_provider refused", name, err)
			}
		case p.Issuer == "":
			if err == nil || !strings.Contains(err.Error(), `idp_provider_url: is required for idp_provider "`+name+`"`) {
				t.Errorf("%s without idp_provider_url: err = %v", name, err)
			}
		default:
			if err != nil {
				t.Errorf("%s without idp_provider_url: %v", name, err)
			}
		}
	}
	if p, _ := LookupProvider("azure"); p.Issuer != "" {
		t.Error("azure has a fixed issuer: its issuer depends on the tenant")
	}
}

// TestPluginConfig_CarriesRedaction: the redaction list reaches the filter as configured,
// unset (nil: the default list) and empty (no redaction) kept apart.
func TestPluginConfig_CarriesRedaction(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		yaml string
		want []string
		max  int
	}{
		{validBase, nil, 0},
		{validBase + "authorize_log_redact: []\n", []string{}, 0},
		{validBase + "authorize_log_redact: [ssn, '$.credentials.key']\nauthorize_log_max_parameter_bytes: 512\n", []string{"ssn", "$.credentials.key"}, 512},
	} {
		c, err := Parse([]byte(tc.yaml), noEnv)
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(c.PluginConfig())
		if err != nil {
			t.Fatal(err)
		}
		pc, err := pluginconf.Parse(b)
		if err != nil {
			t.Fatal(err)
		}
		if (pc.AuthorizeLogRedact == nil) != (tc.want == nil) || !slices.Equal(pc.AuthorizeLogRedact, tc.want) || pc.AuthorizeLogMaxParameterBytes != tc.max {
			t.Errorf("%q: redact %#v max %d, want %#v %d", tc.yaml[len(validBase):], pc.AuthorizeLogRedact, pc.AuthorizeLogMaxParameterBytes, tc.want, tc.max)
		}
	}
}
