package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcpmesh/gateway/shared/checkapi"
	"github.com/mcpmesh/gateway/shared/paths"
)

// Routing assertions: which host serves which endpoint with which methods (routes.go). Some
// were the handlers' own checks before routing moved to routes.go, and were asserted in the
// packages of those handlers (session, oauth, assertion).

func TestEndpoints_OnlyOnTheirHosts(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	for _, u := range []string{"https://auth.example.com" + paths.SignIn, "https://auth.example.com" + paths.Handoff, "https://app.example.com" + paths.AuthenticateSignIn, "https://app.example.com" + paths.IDPCallback} {
		if resp := e.public(http.MethodGet, u, nil); resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s: status %d, want 404", u, resp.StatusCode)
		}
	}
}

func TestMetadata_NotServedOnHostsWithoutMCPServers(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	endpoints := []string{
		paths.AuthorizationServerMetadata, paths.ProtectedResourceMetadata, paths.ProtectedResourceMetadata + "/",
		paths.Register, paths.Token, paths.Revoke, paths.Authorize, paths.Consent,
	}
	for _, origin := range []string{"https://auth.example.com", "https://app.example.com", "https://plain.example.com"} {
		for _, p := range endpoints {
			resp := e.public(http.MethodGet, origin+p, nil)
			if resp.StatusCode != http.StatusNotFound || resp.Header.Get("Content-Type") != "application/json" {
				t.Errorf("%s%s: status %d, Content-Type %q", origin, p, resp.StatusCode, resp.Header.Get("Content-Type"))
			}
		}
	}
}

// wantJSONError checks an error answer: status, JSON Content-Type and the "error" member.
func wantJSONError(t *testing.T, name string, resp *http.Response, status int, code string) {
	t.Helper()
	var eb errorBody
	_ = json.NewDecoder(resp.Body).Decode(&eb)
	if resp.StatusCode != status || eb.Error != code {
		t.Errorf("%s: got status %d error %q (%s), want %d %q", name, resp.StatusCode, eb.Error, eb.Description, status, code)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s: error Content-Type %q", name, ct)
	}
}

func TestRoutes_MethodsOfTheAuthorizationServer(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	const issuer = "https://mcp.example.com"
	wantJSONError(t, "GET token", e.public(http.MethodGet, issuer+paths.Token+"?grant_type=authorization_code", nil), http.StatusMethodNotAllowed, "invalid_request")
	for _, p := range []string{paths.Register, paths.Revoke, paths.Consent} {
		if resp := e.public(http.MethodGet, issuer+p, nil); resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("GET %s: status %d", p, resp.StatusCode)
		}
	}
	resp := e.public(http.MethodPost, issuer+paths.AuthorizationServerMetadata, nil)
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") == "" {
		t.Errorf("POST metadata: status %d Allow %q", resp.StatusCode, resp.Header.Get("Allow"))
	}
	resp = e.public(http.MethodGet, issuer+paths.AuthorizationServerMetadata+"/tenant", nil)
	if resp.StatusCode != http.StatusNotFound || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("metadata/tenant: status %d, Content-Type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}

func TestRoutes_CORSOnCredentialFreeEndpointsOnly(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	const issuer = "https://mcp.example.com"
	for _, p := range []string{paths.AuthorizationServerMetadata, paths.ProtectedResourceMetadata + "/mcp", paths.Token, paths.Register, paths.Revoke} {
		resp := e.public(http.MethodOptions, issuer+p, http.Header{"Origin": {"https://inspector.example"}, "Access-Control-Request-Method": {"POST"}})
		h := resp.Header
		if resp.StatusCode != http.StatusNoContent || h.Get("Access-Control-Allow-Origin") != "*" ||
			!strings.Contains(h.Get("Access-Control-Allow-Headers"), "mcp-protocol-version") ||
			!strings.Contains(h.Get("Access-Control-Allow-Headers"), "Authorization") {
			t.Errorf("preflight %s: status %d headers %v", p, resp.StatusCode, h)
		}
	}
	for _, p := range []string{paths.Authorize, paths.Consent} {
		if resp := e.public(http.MethodOptions, issuer+p, nil); resp.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("%s answers CORS", p)
		}
	}
}

func TestRoutes_JWKSAndHealthMethods(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	if resp := e.public(http.MethodPost, "https://auth.example.com"+paths.JWKS, nil); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST JWKS: status %d", resp.StatusCode)
	}
	if resp := e.public(http.MethodHead, "https://app.example.com"+paths.JWKS, nil); resp.StatusCode != http.StatusOK {
		t.Errorf("HEAD JWKS: status %d", resp.StatusCode)
	}
	wantJSONError(t, "POST health", e.public(http.MethodPost, "http://10.1.2.3:8480"+paths.Health, nil), http.StatusMethodNotAllowed, "invalid_request")
	rec := httptest.NewRecorder()
	e.srv.InternalHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, paths.Health, nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("internal POST health: status %d", rec.Code)
	}
}

func TestRoutes_CheckAPIPathIsExactAndKeyComesFirst(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	for _, tc := range []struct {
		method, path string
		key          bool
		want         int
	}{
		{http.MethodGet, paths.Check, false, http.StatusUnauthorized},
		{http.MethodGet, paths.Check, true, http.StatusMethodNotAllowed},
		{http.MethodPost, paths.Check + "/", true, http.StatusNotFound},
		{http.MethodPost, "/nothing", true, http.StatusNotFound},
	} {
		r := httptest.NewRequest(tc.method, tc.path, strings.NewReader("{}"))
		if tc.key {
			r.Header.Set(checkapi.KeyHeader, e.cfg.FilterKey())
		}
		rec := httptest.NewRecorder()
		e.srv.InternalHandler().ServeHTTP(rec, r)
		if rec.Code != tc.want {
			t.Errorf("%s %s (key %v): status %d, want %d", tc.method, tc.path, tc.key, rec.Code, tc.want)
		}
	}
}
