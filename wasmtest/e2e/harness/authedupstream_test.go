package harness

import (
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
)

// cimdServer serves a client ID metadata document over https (httptest's TLS server) and
// writes its certificate to a PEM file for NODE_EXTRA_CA_CERTS.
type cimdServer struct {
	URL     string // the document's URL, its client_id
	CAFile  string
	fetches atomic.Int32
}

func startCIMDServer(t *testing.T, clientID func(docURL string) string) *cimdServer {
	t.Helper()
	c := &cimdServer{}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/oauth/client.json" {
			http.NotFound(w, r)
			return
		}
		c.fetches.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"client_id":   clientID(c.URL),
			"client_name": "harness test client",
			// Loopback, any port (RFC 8252 section 7.3): the client's callback port is only
			// known once it runs.
			"redirect_uris":              []string{"http://127.0.0.1/callback"},
			"application_type":           "native",
			"grant_types":                []string{"authorization_code", "refresh_token"},
			"response_types":             []string{"code"},
			"token_endpoint_auth_method": "none",
		})
	}))
	t.Cleanup(srv.Close)
	c.URL = srv.URL + "/oauth/client.json"
	c.CAFile = filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(c.CAFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	return c
}

// callerOf decodes what whoami / whoami_admin returned.
func callerOf(t *testing.T, name string, r *ToolCallResult) UpstreamCaller {
	t.Helper()
	var c UpstreamCaller
	if r == nil || r.IsError || len(r.Content) != 1 {
		t.Fatalf("%s: want one text item, got %+v", name, r)
	}
	if err := json.Unmarshal([]byte(r.Content[0].Text), &c); err != nil {
		t.Fatalf("%s: %v in %q", name, err, r.Content[0].Text)
	}
	return c
}

// TestAuthedUpstream_TSClientDirect is the baseline of the upstream-discovery tests: the
// official TypeScript SDK client against upstream-authed-mcp.mjs with no gateway, in both
// registration modes.
func TestAuthedUpstream_TSClientDirect(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{UpstreamDCR, UpstreamCIMD} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			opts := ClientOptions{Tool: "whoami", DeniedTool: "whoami_admin"}
			var doc *cimdServer
			var up *AuthedUpstream
			if mode == UpstreamCIMD {
				doc = startCIMDServer(t, func(u string) string { return u })
				up = StartAuthedUpstream(t, AuthedUpstreamOptions{Mode: mode, Env: []string{"NODE_EXTRA_CA_CERTS=" + doc.CAFile}})
				opts.ClientMetadataURL = doc.URL
			} else {
				up = StartAuthedUpstream(t, AuthedUpstreamOptions{})
			}
			opts.URL = up.MCP
			res, err := RunTSClient(t, opts)
			if err != nil {
				t.Fatalf("%v\nbrowser: %v", err, res.Browser)
			}
			t.Logf("steps %v, client %q, authorization %v", res.Steps, res.ClientID, res.AuthorizationParams)

			if mode == UpstreamCIMD {
				if res.Registered || res.ClientID != doc.URL {
					t.Errorf("client_id %q (registered %v), want the document URL %q", res.ClientID, res.Registered, doc.URL)
				}
				if doc.fetches.Load() == 0 {
					t.Error("the authorization server never fetched the client ID metadata document")
				}
			} else if !res.Registered || strings.HasPrefix(res.ClientID, "https://") {
				t.Errorf("client_id %q (registered %v), want a dynamically registered one", res.ClientID, res.Registered)
			}
			for k, want := range map[string]string{"resource": up.MCP, "scope": "mcp", "code_challenge_method": "S256"} {
				if got := res.AuthorizationParams[k]; got != want {
					t.Errorf("authorization request %s=%q, want %q", k, got, want)
				}
			}
			for name, call := range map[string]*ToolCallResult{"whoami": res.Call, "whoami after refresh": res.CallAfterRefresh} {
				c := callerOf(t, name, call)
				if c.Sub != "alice" || !slices.Equal(c.Scopes, []string{"mcp"}) || c.ClientID != res.ClientID || c.Resource != up.MCP {
					t.Errorf("%s: upstream saw %+v, want alice with scopes [mcp], client %q, resource %q", name, c, res.ClientID, up.MCP)
				}
			}
			if !res.Refreshed || !res.RefreshTokenRotated {
				t.Errorf("refreshed %v, refresh token rotated %v; want both", res.Refreshed, res.RefreshTokenRotated)
			}
			if res.DeniedCall != nil || !strings.Contains(res.DeniedCallError, "403") {
				t.Errorf("whoami_admin with scope mcp: result %+v, error %q; want a 403 error", res.DeniedCall, res.DeniedCallError)
			}

			reqs := up.Requests(t)
			if len(reqs) == 0 || reqs[0].Status != http.StatusUnauthorized ||
				!strings.Contains(reqs[0].WWWAuthenticate, `resource_metadata="`+up.ResourceMetadata+`"`) {
				t.Errorf("first upstream request %+v, want 401 naming resource_metadata %s", reqs[:min(1, len(reqs))], up.ResourceMetadata)
			}
			var admin403 int
			for _, r := range reqs {
				if r.Tool != "whoami_admin" {
					continue
				}
				if r.Status != http.StatusForbidden || !strings.Contains(r.WWWAuthenticate, `error="insufficient_scope"`) ||
					!strings.Contains(r.WWWAuthenticate, `scope="mcp admin"`) {
					t.Errorf("whoami_admin request %+v, want 403 insufficient_scope with scope \"mcp admin\"", r)
				}
				admin403++
			}
			if admin403 == 0 {
				t.Error("the upstream never saw the whoami_admin call")
			}
		})
	}
}

// TestAuthedUpstream_Refusals: what the upstream's authorization server refuses, seen by the
// TypeScript SDK client.
func TestAuthedUpstream_Refusals(t *testing.T) {
	t.Parallel()
	t.Run("revoked at the authorization server: refresh gets invalid_grant", func(t *testing.T) {
		t.Parallel()
		up := StartAuthedUpstream(t, AuthedUpstreamOptions{})
		res, err := RunTSClient(t, ClientOptions{URL: up.MCP, Tool: "whoami", BeforeRefresh: func() { up.Revoke(t, "alice") }})
		t.Logf("flow error: %v", err)
		if err == nil || res.RefreshError != "invalid_grant" || res.Refreshed {
			t.Errorf("flow error %v, refresh error %q, refreshed %v; want the refresh refused with invalid_grant", err, res.RefreshError, res.Refreshed)
		}
	})
	t.Run("cimd: a document whose client_id is another URL", func(t *testing.T) {
		t.Parallel()
		doc := startCIMDServer(t, func(u string) string { return u + "?other" })
		up := StartAuthedUpstream(t, AuthedUpstreamOptions{Mode: UpstreamCIMD, Env: []string{"NODE_EXTRA_CA_CERTS=" + doc.CAFile}})
		res, err := RunTSClient(t, ClientOptions{URL: up.MCP, Tool: "whoami", ClientMetadataURL: doc.URL, NoRefresh: true})
		t.Logf("flow error: %v", err)
		if err == nil || !strings.Contains(res.Error, "invalid_client_metadata") {
			t.Errorf("flow error %v (%q), want invalid_client_metadata", err, res.Error)
		}
		if doc.fetches.Load() == 0 {
			t.Error("the authorization server never fetched the document")
		}
	})
	t.Run("cimd: a client without a document cannot register", func(t *testing.T) {
		t.Parallel()
		up := StartAuthedUpstream(t, AuthedUpstreamOptions{Mode: UpstreamCIMD})
		res, err := RunTSClient(t, ClientOptions{URL: up.MCP, Tool: "whoami", NoRefresh: true})
		t.Logf("flow error: %v", err)
		if err == nil || res.Registered || !strings.Contains(res.Error, "registration") {
			t.Errorf("flow error %v (%q), registered %v; want no registration", err, res.Error, res.Registered)
		}
	})
}
