package harness

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
)

// protectedMCP is a minimal OAuth-protected MCP resource server for the harness's own tests:
// it publishes protected resource metadata naming the test IDP (acting as an MCP
// authorization server with dynamic registration and JWT access tokens for this resource),
// answers 401 with resource_metadata without a valid token, and proxies valid requests to an
// MCP server. It stands in for the gateway so the client flows can be proven before it exists.
type protectedMCP struct {
	URL string
	IDP *IDP

	mu       sync.Mutex
	tokens   []string // distinct access tokens accepted, in first-use order
	rejected int
}

func startProtectedMCP(t *testing.T, upstreamMCP string, opts IDPOptions) *protectedMCP {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	resource := base + "/mcp"
	opts.Registration = true
	opts.Resources = []string{resource}
	idp := StartIDP(t, opts)
	p := &protectedMCP{URL: resource, IDP: idp}

	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	verifier := oidc.NewVerifier(idp.Issuer, oidc.NewRemoteKeySet(ctx, idp.Issuer+"/jwks"), &oidc.Config{ClientID: resource})
	up, err := url.Parse(upstreamMCP)
	if err != nil {
		t.Fatal(err)
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(&url.URL{Scheme: up.Scheme, Host: up.Host})
			r.Out.URL.Path = up.Path
			r.Out.Header.Del("Authorization")
		},
		FlushInterval: -1,
	}
	prmPath := "/.well-known/oauth-protected-resource/mcp"
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+prmPath, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"resource":                 resource,
			"authorization_servers":    []string{idp.Issuer},
			"scopes_supported":         []string{"mcp", "offline_access"},
			"bearer_methods_supported": []string{"header"},
		})
	})
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		raw, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if ok {
			if _, err := verifier.Verify(r.Context(), raw); err == nil {
				p.accepted(raw)
				if err := bufferBody(r); err != nil {
					http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
					return
				}
				proxy.ServeHTTP(w, r)
				return
			}
		}
		p.mu.Lock()
		p.rejected++
		p.mu.Unlock()
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+base+prmPath+`"`)
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return p
}

func (p *protectedMCP) accepted(tok string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !slices.Contains(p.tokens, tok) {
		p.tokens = append(p.tokens, tok)
	}
}

func (p *protectedMCP) seen() (tokens, rejected int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.tokens), p.rejected
}

// checkFullFlow checks a successful client flow with a refresh.
func checkFullFlow(t *testing.T, res *ClientResult, p *protectedMCP) {
	t.Helper()
	for _, step := range []string{"unauthorized", "authorization-request", "callback", "token", "connected", "tools/list", "tools/call", "refresh", "tools/call-after-refresh"} {
		if !slices.Contains(res.Steps, step) {
			t.Errorf("step %q missing from %v", step, res.Steps)
		}
	}
	if !res.Registered || res.ClientID == "" {
		t.Errorf("dynamic registration: registered=%v client_id=%q", res.Registered, res.ClientID)
	}
	if !slices.Contains(res.Tools, "test_simple_text") {
		t.Errorf("tools/list returned %v, want test_simple_text among them", res.Tools)
	}
	for name, call := range map[string]*ToolCallResult{"call": res.Call, "call after refresh": res.CallAfterRefresh} {
		if call == nil || call.IsError || len(call.Content) == 0 || call.Content[0].Text == "" {
			t.Errorf("%s: %+v, want a text result", name, call)
		}
	}
	if !res.Refreshed || !res.AccessTokenChanged {
		t.Errorf("refreshed=%v access_token_changed=%v, want both", res.Refreshed, res.AccessTokenChanged)
	}
	if !res.RefreshTokenRotated {
		t.Errorf("refresh token not rotated for a public client")
	}
	if got := res.AuthorizationParams["resource"]; got != p.URL {
		t.Errorf("authorization request resource %q, want %q", got, p.URL)
	}
	if got := res.AuthorizationParams["code_challenge_method"]; got != "S256" {
		t.Errorf("code_challenge_method %q, want S256", got)
	}
	tokens, rejected := p.seen()
	if tokens < 2 || rejected < 1 {
		t.Errorf("resource server accepted %d distinct tokens and rejected %d requests, want >= 2 and >= 1", tokens, rejected)
	}
}

func TestTSClient_FullFlowAgainstOAuthProtectedServer(t *testing.T) {
	t.Parallel()
	p := startProtectedMCP(t, StartEverythingServer(t), IDPOptions{})
	res, err := RunTSClient(t, ClientOptions{URL: p.URL, Tool: "test_simple_text"})
	if err != nil {
		t.Fatalf("%v\nbrowser: %v", err, res.Browser)
	}
	t.Logf("steps %v, scope %q, authorization %v", res.Steps, res.Scope, res.AuthorizationParams)
	t.Logf("browser %v", res.Browser)
	checkFullFlow(t, res, p)
	if got := res.AuthorizationParams["prompt"]; got != "consent" {
		t.Errorf("prompt %q, want consent (scope has offline_access)", got)
	}
}

func TestTSClient_ConsentFormDeniedFails(t *testing.T) {
	t.Parallel()
	p := startProtectedMCP(t, StartEverythingServer(t), IDPOptions{ConsentForm: true})
	res, err := RunTSClient(t, ClientOptions{URL: p.URL, Tool: "test_simple_text", Deny: true})
	if err == nil {
		t.Fatalf("flow succeeded after the user denied consent: %+v", res)
	}
	if !strings.Contains(res.Error, "access_denied") {
		t.Errorf("error %q, want access_denied", res.Error)
	}
	if tokens, _ := p.seen(); tokens != 0 {
		t.Errorf("resource server accepted %d tokens, want 0", tokens)
	}
}

func TestGoClient_FullFlowAgainstOAuthProtectedServer(t *testing.T) {
	t.Parallel()
	p := startProtectedMCP(t, StartEverythingServer(t), IDPOptions{})
	res, err := RunGoClient(t, ClientOptions{URL: p.URL, Tool: "test_simple_text"})
	if err != nil {
		t.Fatalf("%v\nbrowser: %v", err, res.Browser)
	}
	t.Logf("steps %v, scope %q, authorization %v", res.Steps, res.Scope, res.AuthorizationParams)
	checkFullFlow(t, res, p)
}

func TestGoClient_ConsentFormDeniedFails(t *testing.T) {
	t.Parallel()
	p := startProtectedMCP(t, StartEverythingServer(t), IDPOptions{ConsentForm: true})
	res, err := RunGoClient(t, ClientOptions{URL: p.URL, Tool: "test_simple_text", Deny: true})
	if err == nil {
		t.Fatalf("flow succeeded after the user denied consent: %+v", res)
	}
	if !strings.Contains(res.Error, "access_denied") {
		t.Errorf("error %q, want access_denied", res.Error)
	}
	if tokens, _ := p.seen(); tokens != 0 {
		t.Errorf("resource server accepted %d tokens, want 0", tokens)
	}
}

// TestClients_PreregisteredConfidentialClient runs both SDK clients with a client registered
// ahead of time (no dynamic registration), authenticating to the token endpoint with a secret.
func TestClients_PreregisteredConfidentialClient(t *testing.T) {
	t.Parallel()
	secret := rand.Text()
	p := startProtectedMCP(t, StartEverythingServer(t), IDPOptions{Clients: []IDPClient{{
		ClientID:     "mcp-static",
		ClientSecret: secret,
		// Loopback redirect URIs match any port, so each client's ephemeral callback fits.
		RedirectURIs: []string{"http://127.0.0.1/callback"},
	}}})
	opts := ClientOptions{URL: p.URL, Tool: "test_simple_text", ClientID: "mcp-static", ClientSecret: secret}
	for name, run := range map[string]func(testing.TB, ClientOptions) (*ClientResult, error){
		"typescript": RunTSClient,
		"go":         RunGoClient,
	} {
		res, err := run(t, opts)
		if err != nil {
			t.Errorf("%s: %v\nbrowser: %v", name, err, res.Browser)
			continue
		}
		if res.Registered || res.ClientID != "mcp-static" {
			t.Errorf("%s: registered=%v client_id=%q, want the pre-registered client", name, res.Registered, res.ClientID)
		}
		if !res.Refreshed || !res.AccessTokenChanged || res.CallAfterRefresh == nil {
			t.Errorf("%s: refreshed=%v changed=%v call after refresh %+v", name, res.Refreshed, res.AccessTokenChanged, res.CallAfterRefresh)
		}
	}
}

// TestClients_DisabledAccountRefreshIsInvalidGrant disables the account between the first call
// and the refresh: both SDK clients must see invalid_grant on the refresh and then fail to sign
// in again (access_denied), which is how a gateway test observes the specified "provider denies the
// refresh" through real clients.
func TestClients_DisabledAccountRefreshIsInvalidGrant(t *testing.T) {
	t.Parallel()
	upstream := StartEverythingServer(t)
	for name, run := range map[string]func(testing.TB, ClientOptions) (*ClientResult, error){
		"typescript": RunTSClient,
		"go":         RunGoClient,
	} {
		p := startProtectedMCP(t, upstream, IDPOptions{})
		res, err := run(t, ClientOptions{
			URL: p.URL, Tool: "test_simple_text",
			BeforeRefresh: func() { p.IDP.Disable(t, "alice") },
		})
		if err == nil {
			t.Errorf("%s: flow succeeded with a disabled account: %+v", name, res)
			continue
		}
		if res.RefreshError != "invalid_grant" || res.Refreshed {
			t.Errorf("%s: refresh_error %q refreshed=%v, want invalid_grant and no refresh (error: %v)", name, res.RefreshError, res.Refreshed, err)
		}
		if !strings.Contains(res.Error, "access_denied") {
			t.Errorf("%s: error %q, want the new sign-in to end with access_denied", name, res.Error)
		}
		if res.Call == nil || res.CallAfterRefresh != nil {
			t.Errorf("%s: call %+v, call after refresh %+v: want only the first", name, res.Call, res.CallAfterRefresh)
		}
	}
}
