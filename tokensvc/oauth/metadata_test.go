package oauth

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/mcpmesh/gateway/shared/paths"
)

func TestMetadata_AuthorizationServer(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rec := e.get(issuer+paths.AuthorizationServerMetadata, "")
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	var m map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"issuer":                                         issuer,
		"authorization_endpoint":                         issuer + paths.Authorize,
		"token_endpoint":                                 issuer + paths.Token,
		"registration_endpoint":                          issuer + paths.Register,
		"revocation_endpoint":                            issuer + paths.Revoke,
		"response_types_supported":                       []any{"code"},
		"grant_types_supported":                          []any{"authorization_code", "refresh_token"},
		"code_challenge_methods_supported":               []any{"S256"},
		"token_endpoint_auth_methods_supported":          []any{"none", "client_secret_basic", "client_secret_post", "private_key_jwt"},
		"revocation_endpoint_auth_methods_supported":     []any{"none", "client_secret_basic", "client_secret_post", "private_key_jwt"},
		"scopes_supported":                               []any{"mcp", "offline_access"},
		"client_id_metadata_document_supported":          true,
		"authorization_response_iss_parameter_supported": true,
	}
	for k, v := range want {
		if !reflect.DeepEqual(m[k], v) {
			t.Errorf("%s = %v, want %v", k, m[k], v)
		}
	}
	if got := rec.Header().Get("Access-Control-Allow-Origin"); got != "*" {
		t.Errorf("CORS origin %q", got)
	}
	if got := rec.Header().Get("Content-Type"); got != "application/json" {
		t.Errorf("Content-Type %q", got)
	}
}

func TestMetadata_IssuerIgnoresForgedHostHeaders(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cases := []struct {
		name, host string
		headers    map[string]string
		wantStatus int
	}{
		{"forwarded host and proto", "mcp.example.com", map[string]string{"X-Forwarded-Host": "evil.example.net", "X-Forwarded-Proto": "http", "Forwarded": "host=evil.example.net;proto=http"}, 200},
		{"mixed case and trailing dot", "MCP.Example.COM.", nil, 200},
		{"default port", "mcp.example.com:443", nil, 200},
		{"attacker host", "evil.example.net", map[string]string{"X-Forwarded-Host": "mcp.example.com"}, http.StatusMisdirectedRequest},
		{"suffix look-alike", "mcp.example.com.evil.net", nil, http.StatusMisdirectedRequest},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, "https://placeholder"+paths.AuthorizationServerMetadata, nil)
			req.Host = tc.host
			for k, v := range tc.headers {
				req.Header.Set(k, v)
			}
			rec := e.do(req)
			if rec.Code != tc.wantStatus {
				t.Fatalf("status %d, want %d", rec.Code, tc.wantStatus)
			}
			if rec.Code != 200 {
				if strings.Contains(rec.Body.String(), "evil") {
					t.Errorf("body mentions the forged host: %s", rec.Body)
				}
				return
			}
			var m asMetadata
			_ = json.Unmarshal(rec.Body.Bytes(), &m)
			if m.Issuer != issuer || !strings.HasPrefix(m.TokenEndpoint, issuer+"/") {
				t.Errorf("issuer %q token endpoint %q", m.Issuer, m.TokenEndpoint)
			}
		})
	}
}

func TestMetadata_ProtectedResource(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cases := []struct {
		name, url    string
		wantStatus   int
		wantResource string
		wantName     string
	}{
		{"path-aware", issuer + paths.ProtectedResourceMetadata + "/mcp", 200, resMain, "Main MCP"},
		{"second route", issuer + paths.ProtectedResourceMetadata + "/other", 200, resOther, "Other MCP"},
		{"trailing slash", issuer + paths.ProtectedResourceMetadata + "/mcp/", 200, resMain, "Main MCP"},
		{"deeper path covered names the URL asked about", issuer + paths.ProtectedResourceMetadata + "/mcp/sse", 200, resMain + "/sse", "Main MCP"},
		{"host-level with several servers names the origin", issuer + paths.ProtectedResourceMetadata, 200, issuer, ""},
		{"host-level with one server names the origin (RFC 9728 §3.3)", soloIssuer + paths.ProtectedResourceMetadata, 200, soloIssuer, "Solo MCP"},
		{"host-level with one server, slash", soloIssuer + paths.ProtectedResourceMetadata + "/", 200, soloIssuer, "Solo MCP"},
		{"unknown path", issuer + paths.ProtectedResourceMetadata + "/nope", 404, "", ""},
		{"prefix not on a segment boundary", issuer + paths.ProtectedResourceMetadata + "/mcpx", 404, "", ""},
		{"encoded traversal", issuer + paths.ProtectedResourceMetadata + "/%2e%2e/mcp", 404, "", ""},
		{"dot segment", issuer + paths.ProtectedResourceMetadata + "/mcp/./x", 404, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := e.get(tc.url, "")
			if rec.Code != tc.wantStatus {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.wantStatus, rec.Body)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			if tc.wantStatus != 200 {
				return
			}
			var m prMetadata
			if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
				t.Fatal(err)
			}
			origin := issuer
			if strings.HasPrefix(tc.url, soloIssuer) {
				origin = soloIssuer
			}
			want := prMetadata{
				Resource: tc.wantResource, AuthorizationServers: []string{origin},
				BearerMethodsSupported: []string{"header"}, ScopesSupported: []string{"mcp"},
				ResourceName: tc.wantName,
			}
			if !reflect.DeepEqual(m, want) {
				t.Errorf("got %+v, want %+v", m, want)
			}
		})
	}
}

func TestMetadata_UnknownWellKnownSubpathIs404JSON(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rec := e.get(issuer+paths.AuthorizationServerMetadata+"/tenant", "")
	if rec.Code != http.StatusNotFound || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("status %d, Content-Type %q", rec.Code, rec.Header().Get("Content-Type"))
	}
}

func TestMetadata_MethodNotAllowed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, p := range []string{paths.AuthorizationServerMetadata, paths.ProtectedResourceMetadata + "/mcp"} {
		for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
			rec := e.do(httptest.NewRequest(m, issuer+p, nil))
			if rec.Code != http.StatusMethodNotAllowed || !strings.Contains(rec.Header().Get("Allow"), http.MethodGet) ||
				rec.Header().Get("Content-Type") != "application/json" {
				t.Errorf("%s %s: status %d Allow %q Content-Type %q", m, p, rec.Code, rec.Header().Get("Allow"), rec.Header().Get("Content-Type"))
			}
		}
	}
}

func TestCORS_CredentialFreeEndpointsOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, p := range []string{paths.AuthorizationServerMetadata, paths.ProtectedResourceMetadata + "/mcp", paths.Token, paths.Register, paths.Revoke} {
		req := httptest.NewRequest(http.MethodOptions, issuer+p, nil)
		req.Header.Set("Origin", "https://inspector.example")
		req.Header.Set("Access-Control-Request-Method", "POST")
		rec := e.do(req)
		h := rec.Header()
		if rec.Code != http.StatusNoContent || h.Get("Access-Control-Allow-Origin") != "*" ||
			!strings.Contains(h.Get("Access-Control-Allow-Headers"), "mcp-protocol-version") ||
			!strings.Contains(h.Get("Access-Control-Allow-Headers"), "Authorization") {
			t.Errorf("preflight %s: status %d headers %v", p, rec.Code, h)
		}
	}
	for _, p := range []string{paths.Authorize, paths.Consent} {
		req := httptest.NewRequest(http.MethodOptions, issuer+p, nil)
		rec := e.do(req)
		if rec.Header().Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("%s answers CORS", p)
		}
	}
}
