package server

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/shared/checkapi"
	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/tokensvc/store"
	"github.com/mcpmesh/gateway/tokensvc/upstream"
)

// Pattern 2: an MCP client's authorization request on a host with an upstream_oauth2 route
// sends a signed-in user without a usable TI to the upstream provider first, then back to the
// same authorization request; with a TI, or with prompt=none, it goes on as usual.
func TestAuthorize_ChainsTheUpstreamConnect(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	s := e.session("alice")
	cookie := e.cookie(s, "gh.example.com")
	now := e.clock.now()
	client := store.Client{ID: "dyn-1", Kind: store.ClientDynamic, Name: "Some client", RedirectURIs: []string{"http://127.0.0.1/cb"},
		GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"}, TokenEndpointAuthMethod: "none", CreatedAt: now}
	if err := e.store.CreateClient(context.Background(), client); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("verifier-verifier-verifier-verifier-verifier"))
	q := url.Values{"client_id": {client.ID}, "redirect_uri": {"http://127.0.0.1/cb"}, "response_type": {"code"},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"}, "resource": {ghRoute}, "state": {"xyz"}}
	authorize := func(extra url.Values) *http.Response {
		v := url.Values{}
		for k, vs := range q {
			v[k] = vs
		}
		for k, vs := range extra {
			v[k] = vs
		}
		return e.public(http.MethodGet, "https://gh.example.com"+paths.Authorize+"?"+v.Encode(),
			http.Header{"Cookie": {checkapi.SessionCookie + "=" + cookie}})
	}

	resp := authorize(nil)
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "https://github.com/login/oauth/authorize?") {
		t.Fatalf("without a TI: %d %q, want the upstream provider", resp.StatusCode, loc)
	}
	u, _ := url.Parse(loc)
	if u.Query().Get("redirect_uri") != "https://gh.example.com/.gateway/mcp/oauth2/callback" || u.Query().Get("client_id") != "up" {
		t.Errorf("upstream authorization request %v", u.Query())
	}
	// prompt=none never leaves for the upstream.
	if resp := authorize(url.Values{"prompt": {"none"}}); strings.HasPrefix(resp.Header.Get("Location"), "https://github.com/") {
		t.Errorf("prompt=none went to the upstream provider")
	}
	// Connected: the consent page, as without upstream OAuth.
	if err := e.srv.Upstream().SaveToken(context.Background(), "alice", ghRoute, upstream.Token{AccessToken: "ti", Expiry: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if resp := authorize(nil); resp.StatusCode != http.StatusOK || resp.Header.Get("Location") != "" {
		t.Errorf("with a TI: %d %q, want the consent page", resp.StatusCode, resp.Header.Get("Location"))
	}
	// A resource on another host's route (mcp.example.com) chains nothing here.
	if err := e.srv.Upstream().DisconnectRoute(context.Background(), "alice", ghRoute); err != nil {
		t.Fatal(err)
	}
	mcpCookie := e.cookie(s, "mcp.example.com")
	resp = e.public(http.MethodGet, "https://mcp.example.com"+paths.Authorize+"?"+strings.Replace(q.Encode(), url.QueryEscape(ghRoute), url.QueryEscape(demoRoute), 1),
		http.Header{"Cookie": {checkapi.SessionCookie + "=" + mcpCookie}})
	if resp.StatusCode != http.StatusOK {
		t.Errorf("route without upstream: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
}
