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

// TestAuthedUpstream_Direct is the baseline of the upstream-discovery tests: official SDK
// clients against upstream-authed-mcp.mjs with no gateway. Each signs in (401, discovery,
// registration or a client ID metadata document, PKCE with the resource), calls whoami as
// alice with scope mcp, refreshes, and calls whoami_admin, which needs scope admin too: the
// upstream answers 403 insufficient_scope. The Go SDK then steps up (a new authorization for
// "mcp admin") and the call succeeds; the TypeScript SDK 1.32.2 only refreshes (a refresh
// cannot add a scope) and gives up with "Server returned 403 after trying upscoping".
func TestAuthedUpstream_Direct(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		mode   string
		run    func(testing.TB, ClientOptions) (*ClientResult, error)
		stepUp bool
	}{
		{"typescript/dcr", UpstreamDCR, RunTSClient, false},
		{"typescript/cimd", UpstreamCIMD, RunTSClient, false},
		{"go/dcr", UpstreamDCR, RunGoClient, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			opts := ClientOptions{Tool: "whoami", DeniedTool: "whoami_admin"}
			var doc *cimdServer
			var up *AuthedUpstream
			if tc.mode == UpstreamCIMD {
				doc = startCIMDServer(t, func(u string) string { return u })
				up = StartAuthedUpstream(t, AuthedUpstreamOptions{Mode: tc.mode, Env: []string{"NODE_EXTRA_CA_CERTS=" + doc.CAFile}})
				opts.ClientMetadataURL = doc.URL
			} else {
				up = StartAuthedUpstream(t, AuthedUpstreamOptions{})
			}
			opts.URL = up.MCP
			res, err := tc.run(t, opts)
			if err != nil {
				t.Fatalf("%v\nbrowser: %v", err, res.Browser)
			}
			t.Logf("steps %v, client %q, authorization %v", res.Steps, res.ClientID, res.AuthorizationParams)

			if tc.mode == UpstreamCIMD {
				if res.Registered || res.ClientID != doc.URL {
					t.Errorf("client_id %q (registered %v), want the document URL %q", res.ClientID, res.Registered, doc.URL)
				}
				if doc.fetches.Load() == 0 {
					t.Error("the authorization server never fetched the client ID metadata document")
				}
			} else if !res.Registered || strings.HasPrefix(res.ClientID, "https://") {
				t.Errorf("client_id %q (registered %v), want a dynamically registered one", res.ClientID, res.Registered)
			}
			if res.AuthorizationParams != nil { // the TypeScript client reports them
				for k, want := range map[string]string{"resource": up.MCP, "code_challenge_method": "S256"} {
					if got := res.AuthorizationParams[k]; got != want {
						t.Errorf("authorization request %s=%q, want %q", k, got, want)
					}
				}
			}
			first := callerOf(t, "whoami", res.Call)
			if first.Sub != "alice" || !slices.Equal(first.Scopes, []string{"mcp"}) || first.Resource != up.MCP {
				t.Errorf("whoami: upstream saw %+v, want alice with scopes [mcp] for %s", first, up.MCP)
			}
			if tc.mode == UpstreamCIMD && first.ClientID != doc.URL {
				t.Errorf("whoami: client_id %q, want %q", first.ClientID, doc.URL)
			}
			if again := callerOf(t, "whoami after refresh", res.CallAfterRefresh); again.Sub != "alice" {
				t.Errorf("whoami after refresh: upstream saw %+v, want alice", again)
			}
			if !res.Refreshed || !res.RefreshTokenRotated {
				t.Errorf("refreshed %v, refresh token rotated %v; want both", res.Refreshed, res.RefreshTokenRotated)
			}
			if tc.stepUp {
				// Scopes are a set (RFC 6749 section 3.3): the client may ask for them in any order.
				if admin := callerOf(t, "whoami_admin", res.DeniedCall); admin.Sub != "alice" || !slices.Equal(slices.Sorted(slices.Values(admin.Scopes)), []string{"admin", "mcp"}) {
					t.Errorf("whoami_admin after step-up: upstream saw %+v, want alice with scopes [mcp admin]", admin)
				}
			} else if res.DeniedCall != nil || !strings.Contains(res.DeniedCallError, "403") {
				t.Errorf("whoami_admin with scope mcp: result %+v, error %q; want a 403 error", res.DeniedCall, res.DeniedCallError)
			}

			reqs := up.Requests(t)
			if len(reqs) == 0 || reqs[0].Status != http.StatusUnauthorized ||
				!strings.Contains(reqs[0].WWWAuthenticate, `resource_metadata="`+up.ResourceMetadata+`"`) ||
				!strings.Contains(reqs[0].WWWAuthenticate, `scope="mcp"`) {
				t.Errorf("first upstream request %+v, want 401 naming scope mcp and resource_metadata %s", reqs[:min(1, len(reqs))], up.ResourceMetadata)
			}
			var admin []UpstreamRequest
			for _, r := range reqs {
				if r.Tool == "whoami_admin" {
					admin = append(admin, r)
				}
			}
			if len(admin) == 0 || admin[0].Status != http.StatusForbidden ||
				!strings.Contains(admin[0].WWWAuthenticate, `error="insufficient_scope"`) ||
				!strings.Contains(admin[0].WWWAuthenticate, `scope="mcp admin"`) {
				t.Errorf("whoami_admin requests %+v, want a first 403 insufficient_scope with scope \"mcp admin\"", admin)
			}
			if stepped := len(admin) > 0 && admin[len(admin)-1].Status == http.StatusOK; stepped != tc.stepUp {
				t.Errorf("whoami_admin requests %+v: last one succeeded %v, want %v", admin, stepped, tc.stepUp)
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
