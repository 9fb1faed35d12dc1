package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"
)

// upstreamGrant signs alice in at up with a plain OAuth client (PKCE, resource) and returns
// the client ID, the token and the AS metadata. With clientID "" it registers a client
// (UpstreamDCR); otherwise clientID is a client ID metadata document URL whose document lists
// redirect.
func upstreamGrant(t *testing.T, ctx context.Context, up *AuthedUpstream, scope, clientID, redirect string) (string, *oauth2.Token, map[string]any) {
	t.Helper()
	var meta map[string]any
	getJSON(t, ctx, up.Issuer+"/.well-known/openid-configuration", &meta)
	endpoint := func(k string) string {
		s, _ := meta[k].(string)
		if s == "" {
			t.Fatalf("authorization server metadata has no %s", k)
		}
		return s
	}
	if clientID == "" {
		reg := postJSON(t, ctx, endpoint("registration_endpoint"), map[string]any{
			"redirect_uris":              []string{redirect},
			"grant_types":                []string{"authorization_code", "refresh_token"},
			"token_endpoint_auth_method": "none",
			"application_type":           "native",
			"scope":                      scope,
		})
		clientID, _ = reg["client_id"].(string)
	}
	cfg := oauth2.Config{
		ClientID:    clientID,
		Endpoint:    oauth2.Endpoint{AuthURL: endpoint("authorization_endpoint"), TokenURL: endpoint("token_endpoint"), AuthStyle: oauth2.AuthStyleInParams},
		RedirectURL: redirect,
		Scopes:      strings.Fields(scope),
	}
	verifier := oauth2.GenerateVerifier()
	resource := oauth2.SetAuthURLParam("resource", up.MCP)
	back, err := NewBrowser().Authorize(ctx, cfg.AuthCodeURL("st", oauth2.S256ChallengeOption(verifier), resource), redirect)
	if err != nil {
		t.Fatalf("sign-in: %v", err)
	}
	tok, err := cfg.Exchange(ctx, back.Query().Get("code"), oauth2.VerifierOption(verifier), resource)
	if err != nil {
		t.Fatalf("token: %v", err)
	}
	if tok.RefreshToken == "" {
		t.Fatal("no refresh token issued")
	}
	return clientID, tok, meta
}

func getJSON(t *testing.T, ctx context.Context, u string, v any) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
}

func postJSON(t *testing.T, ctx context.Context, u string, body any) map[string]any {
	t.Helper()
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode >= 300 {
		t.Fatalf("POST %s: %s %v %v", u, resp.Status, out, err)
	}
	return out
}

// postForm posts a form and returns the status and the JSON answer.
func postForm(t *testing.T, ctx context.Context, u string, form url.Values) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	raw, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(raw, &out)
	return resp.StatusCode, out
}

const (
	rpcInitialize  = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"harness","version":"1"}}}`
	rpcWhoamiAdmin = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"whoami_admin","arguments":{}}}`
)

// mcpPost posts one JSON-RPC message to the upstream (stateless: no session needed) with the
// access token and returns the status, WWW-Authenticate and body.
func mcpPost(t *testing.T, ctx context.Context, up *AuthedUpstream, accessToken, msg string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, up.MCP, strings.NewReader(msg))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+accessToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate"), string(body)
}

// TestAuthedUpstream_RevocationEndpoint: revoking the refresh token at the upstream's
// revocation endpoint ends the grant: the MCP server refuses the access token at once and the
// refresh token gets invalid_grant. A token for the extra scope is accepted by whoami_admin's
// check (step-up by a client that asks for it).
func TestAuthedUpstream_RevocationEndpoint(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	up := StartAuthedUpstream(t, AuthedUpstreamOptions{})
	clientID, tok, meta := upstreamGrant(t, ctx, up, "mcp admin", "", "http://127.0.0.1/harness-callback")
	if got := tok.Extra("scope"); got != "mcp admin" {
		t.Errorf("granted scope %v, want \"mcp admin\"", got)
	}
	if status, _, body := mcpPost(t, ctx, up, tok.AccessToken, rpcInitialize); status != http.StatusOK {
		t.Fatalf("initialize with a fresh token: %d %s, want 200", status, body)
	}
	status, _, body := mcpPost(t, ctx, up, tok.AccessToken, rpcWhoamiAdmin)
	if status != http.StatusOK || !strings.Contains(body, `\"scopes\":[\"mcp\",\"admin\"]`) || !strings.Contains(body, `\"sub\":\"alice\"`) {
		t.Errorf("whoami_admin with scope \"mcp admin\": %d %s, want alice's scopes", status, body)
	}
	revocation, _ := meta["revocation_endpoint"].(string)
	var out map[string]any
	if status, out = postForm(t, ctx, revocation, url.Values{"token": {tok.RefreshToken}, "token_type_hint": {"refresh_token"}, "client_id": {clientID}}); status != http.StatusOK {
		t.Fatalf("revocation: %d %v", status, out)
	}
	status, challenge, _ := mcpPost(t, ctx, up, tok.AccessToken, rpcInitialize)
	if status != http.StatusUnauthorized || !strings.Contains(challenge, `error="invalid_token"`) {
		t.Errorf("initialize after revocation: %d %q, want 401 invalid_token", status, challenge)
	}
	token, _ := meta["token_endpoint"].(string)
	status, out = postForm(t, ctx, token, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.RefreshToken}, "client_id": {clientID}, "resource": {up.MCP}})
	if status != http.StatusBadRequest || out["error"] != "invalid_grant" {
		t.Errorf("refresh after revocation: %d %v, want 400 invalid_grant", status, out)
	}
}

// TestAuthedUpstream_LoopbackHTTPDocument: with LoopbackHTTPClientIDs, a client ID metadata
// document on plain http://127.0.0.1 is a client (as a gateway on loopback http serves it);
// without it, the same client_id is unknown.
func TestAuthedUpstream_LoopbackHTTPDocument(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var docURL string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"client_id":                  docURL,
			"redirect_uris":              []string{docURL + "/callback"},
			"grant_types":                []string{"authorization_code", "refresh_token"},
			"response_types":             []string{"code"},
			"token_endpoint_auth_method": "none",
		})
	}))
	t.Cleanup(srv.Close)
	docURL = srv.URL + "/client"

	up := StartAuthedUpstream(t, AuthedUpstreamOptions{Mode: UpstreamCIMD, LoopbackHTTPClientIDs: true})
	_, tok, _ := upstreamGrant(t, ctx, up, "mcp", docURL, docURL+"/callback")
	status, _, body := mcpPost(t, ctx, up, tok.AccessToken, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`)
	if status != http.StatusOK || !strings.Contains(body, `\"client_id\":\"`+docURL+`\"`) {
		t.Errorf("whoami: %d %s, want the document URL as client_id", status, body)
	}

	strict := StartAuthedUpstream(t, AuthedUpstreamOptions{Mode: UpstreamCIMD})
	u, err := url.Parse(strict.Issuer + "/auth")
	if err != nil {
		t.Fatal(err)
	}
	u.RawQuery = url.Values{"client_id": {docURL}, "redirect_uri": {docURL + "/callback"}, "response_type": {"code"}, "scope": {"mcp"},
		"code_challenge": {oauth2.S256ChallengeFromVerifier(oauth2.GenerateVerifier())}, "code_challenge_method": {"S256"}, "resource": {strict.MCP}}.Encode()
	_, err = NewBrowser().Authorize(ctx, u.String(), docURL+"/callback")
	t.Logf("without LoopbackHTTPClientIDs: %v", err)
	if err == nil || !strings.Contains(err.Error(), "invalid_client") {
		t.Errorf("sign-in with an http document URL without LoopbackHTTPClientIDs: %v, want invalid_client", err)
	}
}
