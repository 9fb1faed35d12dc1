package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParse_StrictBooleansFlagsSuggestionsAndEnv(t *testing.T) {
	t.Parallel()
	env := func(vars map[string]string) LookupEnv {
		return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	}
	cases := []struct {
		name, yaml string
		env        map[string]string
		want       string
	}{
		{"yes is not a boolean", strings.Replace(validBase, "{mcp: true}", "{mcp: yes}", 1), nil, `runtime_flags.mcp: want true or false, got "yes"`},
		{"on is not a boolean", strings.Replace(validBase, "{mcp: true}", "{mcp: on}", 1), nil, `runtime_flags.mcp: want true or false, got "on"`},
		{"quoted yes", strings.Replace(validBase, "{mcp: true}", `{mcp: "yes"}`, 1), nil, `runtime_flags.mcp: want true or false without quotes`},
		{"quoted true", strings.Replace(validBase, "{mcp: true}", `{mcp: "true"}`, 1), nil, `runtime_flags.mcp: want true or false without quotes`},
		{"unknown runtime flag", strings.Replace(validBase, "{mcp: true}", "{mcp: true, mpc: true}", 1), nil, `runtime_flags.mpc: unknown runtime flag; did you mean "mcp"?`},
		{"mistyped key", strings.Replace(validBase, "idp_client_id:", "idp_clientid:", 1), nil, `idp_clientid: unknown key; did you mean "idp_client_id"?`},
		{"mistyped nested key", strings.Replace(validBase, "mcp: {server: {}}", "mcp: {sever: {}}", 1), nil, `routes[0].mcp.sever: unknown key; did you mean "server"?`},
		{"mistyped provider", strings.Replace(validBase, "idp_provider: oidc", "idp_provider: gogle", 1), nil, `did you mean "google"?`},
		{"provider from env", validBase, map[string]string{"IDP_PROVIDER": "keycloak"}, `idp_provider: must be one of`},
		{"provider from env names it", validBase, map[string]string{"IDP_PROVIDER": "keycloak"}, `(the value comes from the environment variable IDP_PROVIDER)`},
		{"scope from env names it", validBase, map[string]string{"IDP_SCOPES": `openid,"x"`}, `idp_scopes[1]: invalid scope "\"x\"" (the value comes from the environment variable IDP_SCOPES)`},
		{"url from env names it", validBase, map[string]string{"IDP_PROVIDER_URL": "http://idp.example.com"}, `idp_provider_url: plain http is accepted only for loopback hosts; use https (the value comes from the environment variable IDP_PROVIDER_URL)`},
		{"policy boolean spelled yes", strings.Replace(validBase, "mcp: {server: {}}", "mcp: {server: {}}\n    policy: {allow: {and: [{authenticated_user: yes}]}}", 1), nil, `policy.allow.and[0].authenticated_user: wrong type`},
		{"policy boolean quoted", strings.Replace(validBase, "mcp: {server: {}}", "mcp: {server: {}}\n    policy: {allow: {and: [{authenticated_user: \"true\"}]}}", 1), nil, `policy.allow.and[0].authenticated_user: wrong type`},
		{"params from env", validBase, map[string]string{"IDP_REQUEST_PARAMS": `{"prompt": 1}`}, `IDP_REQUEST_PARAMS: want a JSON object of string values`},
		{"azure needs its tenant", strings.Replace(validBase, "idp_provider: oidc\nidp_provider_url: https://idp.example.com", "idp_provider: azure", 1), nil, `idp_provider_url: is required for idp_provider "azure": the issuer of your azure, such as https://login.microsoftonline.com/<tenant-id>/v2.0 (there is no default tenant`},
		{"github enterprise origin", strings.Replace(validBase, "idp_provider: oidc\nidp_provider_url: https://idp.example.com", "idp_provider: github\nidp_provider_url: https://ghe.example.com/api/v3", 1), nil, `idp_provider_url: for github give the origin of GitHub Enterprise Server`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(tc.yaml), env(tc.env))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v\nwant it to contain %q", err, tc.want)
			}
		})
	}
}

func TestParse_ProvidersValidWithoutURLWhereTheTableHasAnIssuer(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"apple", "github", "gitlab", "google"} {
		y := strings.Replace(validBase, "idp_provider: oidc\nidp_provider_url: https://idp.example.com", "idp_provider: "+name, 1)
		if _, err := Parse([]byte(y), noEnv); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	for _, name := range []string{"auth0", "azure", "cognito", "oidc", "okta", "onelogin", "ping"} {
		y := strings.Replace(validBase, "idp_provider: oidc\nidp_provider_url: https://idp.example.com", "idp_provider: "+name, 1)
		if _, err := Parse([]byte(y), noEnv); err == nil || !strings.Contains(err.Error(), "idp_provider_url: is required") {
			t.Errorf("%s without idp_provider_url: %v", name, err)
		}
	}
}

func TestLoad_RelativeStoragePathIsResolvedAgainstTheConfigFolder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "conf", "gateway.yaml")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(validBase+"storage: {type: sqlite, path: data/gw.db}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "conf", "data", "gw.db"); c.Storage.Path != want {
		t.Errorf("storage.path = %q, want %q", c.Storage.Path, want)
	}
	if len(c.Notes) != 1 || !strings.Contains(c.Notes[0], `storage.path "data/gw.db" is relative`) {
		t.Errorf("notes = %q", c.Notes)
	}
	if err := os.WriteFile(path, []byte(validBase), 0o600); err != nil {
		t.Fatal(err)
	}
	if c, err := Load(path); err != nil || c.Storage.Path != DefaultSQLitePath || len(c.Notes) != 0 {
		t.Errorf("default path: %v %q %q", err, c.Storage.Path, c.Notes)
	}
	abs := filepath.Join(dir, "abs.db")
	if err := os.WriteFile(path, []byte(validBase+"storage: {type: sqlite, path: "+abs+"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if c, err := Load(path); err != nil || c.Storage.Path != abs || len(c.Notes) != 0 {
		t.Errorf("absolute path: %v %q %q", err, c.Storage.Path, c.Notes)
	}
}

func FuzzSuggestion(f *testing.F) {
	for _, s := range []string{"mcp", "mpc", "", "idp_provder", strings.Repeat("x", 300)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := suggestion(s, []string{"mcp", "idp_provider", "routes"})
		if out != "" && !strings.HasPrefix(out, "; did you mean ") {
			t.Fatalf("suggestion %q", out)
		}
	})
}

// FuzzParse feeds configurations to Parse: it must return a configuration or an *Error, never
// panic, whatever the YAML.
func FuzzParse(f *testing.F) {
	f.Add([]byte(validBase))
	f.Add([]byte(strings.Replace(validBase, "{mcp: true}", "{mcp: yes, mpc: on}", 1)))
	f.Add([]byte(validBase + "idp_provier: x\nstorage: {type: sqlite, path: a/b.db}\n"))
	f.Add([]byte("runtime_flags: &a {mcp: *a}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data, func(k string) (string, bool) { return "", k == "IDP_PROVIDER" })
		if err == nil && c == nil {
			t.Fatal("nil configuration without an error")
		}
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("error of type %T: %v", err, err)
			}
		}
	})
}
