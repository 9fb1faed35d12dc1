package harness

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Registration modes of an AuthedUpstream's authorization server.
const (
	// UpstreamDCR: open dynamic client registration, no client ID metadata documents.
	UpstreamDCR = "dcr"
	// UpstreamCIMD: client ID metadata documents (https URL client IDs), no registration
	// endpoint.
	UpstreamCIMD = "cimd"
)

// AuthedUpstreamOptions configures StartAuthedUpstream. The zero value is mode UpstreamDCR,
// one user "alice", scope "mcp", extra scope "admin".
type AuthedUpstreamOptions struct {
	// Mode is UpstreamDCR (default) or UpstreamCIMD.
	Mode string
	// Users sign in automatically, the first unless login_hint or LoginAs names another;
	// only Sub, Email and Name are used. Default: one user "alice".
	Users []IDPUser
	// Scope is the scope every MCP request needs (default "mcp"); ExtraScope the one the tool
	// whoami_admin needs in addition (default "admin").
	Scope, ExtraScope string
	// AccessTokenTTL and RefreshTokenTTL default to 1h and 24h.
	AccessTokenTTL, RefreshTokenTTL time.Duration
	// LoopbackHTTPClientIDs (UpstreamCIMD only) also accepts client IDs that are http URLs
	// on 127.0.0.1 as client ID metadata documents, for a gateway on plain loopback http
	// (oidc-provider's own support takes https URLs only).
	LoopbackHTTPClientIDs bool
	// Env are extra environment variables of the Node process, e.g.
	// NODE_EXTRA_CA_CERTS=<PEM file> so that it can fetch client ID metadata documents from an
	// https server signed by a test CA.
	Env []string
}

// AuthedUpstream is a running wasmtest/e2e/node/upstream-authed-mcp.mjs: an MCP server (the
// TypeScript SDK behind its requireBearerAuth) protected by its own authorization server
// (oidc-provider), on two loopback origins.
type AuthedUpstream struct {
	// Mode is UpstreamDCR or UpstreamCIMD.
	Mode string
	// Issuer is the authorization server, http://127.0.0.1:A (OpenID discovery only).
	Issuer string
	// MCP is the MCP endpoint and resource, http://127.0.0.1:B/mcp.
	MCP string
	// ResourceMetadata is its protected resource metadata URL (RFC 9728), the
	// resource_metadata of its 401 challenge.
	ResourceMetadata string

	adminToken string
	proc       *process
}

// UpstreamRequest is one request the upstream MCP server received at /mcp: the HTTP method,
// the JSON-RPC method and tool of the (first) message, the answer's status and
// WWW-Authenticate, and, when the access token was valid, its subject, scopes and client_id.
type UpstreamRequest struct {
	HTTPMethod      string   `json:"http_method"`
	RPCMethod       string   `json:"rpc_method"`
	Tool            string   `json:"tool"`
	Status          int      `json:"status"`
	WWWAuthenticate string   `json:"www_authenticate"`
	Sub             string   `json:"sub"`
	Scopes          []string `json:"scopes"`
	ClientID        string   `json:"client_id"`
}

// UpstreamCaller is what the tools whoami and whoami_admin return (as JSON text): the
// access token's subject, scopes and client_id, and the resource.
type UpstreamCaller struct {
	Sub      string   `json:"sub"`
	Scopes   []string `json:"scopes"`
	ClientID string   `json:"client_id"`
	Resource string   `json:"resource"`
}

// StartAuthedUpstream starts the upstream MCP server and its authorization server on free
// 127.0.0.1 ports and waits until both serve. They are stopped when the test ends.
func StartAuthedUpstream(t testing.TB, opts AuthedUpstreamOptions) *AuthedUpstream {
	t.Helper()
	cfg := map[string]any{"adminToken": rand.Text()}
	if opts.Mode != "" {
		cfg["mode"] = opts.Mode
	}
	if len(opts.Users) > 0 {
		var users []map[string]string
		for _, u := range opts.Users {
			users = append(users, map[string]string{"sub": u.Sub, "email": u.Email, "name": u.Name})
		}
		cfg["users"] = users
	}
	if opts.Scope != "" {
		cfg["scope"] = opts.Scope
	}
	if opts.ExtraScope != "" {
		cfg["extraScope"] = opts.ExtraScope
	}
	if opts.AccessTokenTTL > 0 {
		cfg["accessTokenTTL"] = int64(opts.AccessTokenTTL / time.Second)
	}
	if opts.RefreshTokenTTL > 0 {
		cfg["refreshTokenTTL"] = int64(opts.RefreshTokenTTL / time.Second)
	}
	if opts.LoopbackHTTPClientIDs {
		cfg["loopbackHttpClientIds"] = true
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatalf("harness: encode upstream config: %v", err)
	}
	cmd := exec.Command(Node22Bin(t), nodeScript(t, "upstream-authed-mcp.mjs"))
	cmd.Dir = NodeDir(t)
	// The admin token stays off the command line.
	cmd.Env = childEnv(append([]string{"UPSTREAM_CONFIG=" + string(raw)}, opts.Env...)...)
	p, line := startProcess(t, "upstream-authed-mcp", cmd, func(line string) (string, bool) {
		v, ok := strings.CutPrefix(line, "READY ")
		return v, ok
	}, 30*time.Second)
	var ready struct {
		Mode             string `json:"mode"`
		Issuer           string `json:"issuer"`
		MCP              string `json:"mcp"`
		ResourceMetadata string `json:"resource_metadata"`
	}
	if err := json.Unmarshal([]byte(line), &ready); err != nil {
		t.Fatalf("harness: upstream-authed-mcp printed a bad READY line %q: %v", line, err)
	}
	for _, u := range []string{ready.Issuer, ready.MCP, ready.ResourceMetadata} {
		if !strings.HasPrefix(u, "http://127.0.0.1:") {
			t.Fatalf("harness: upstream-authed-mcp printed a bad URL %q", u)
		}
	}
	return &AuthedUpstream{
		Mode:             ready.Mode,
		Issuer:           ready.Issuer,
		MCP:              ready.MCP,
		ResourceMetadata: ready.ResourceMetadata,
		adminToken:       cfg["adminToken"].(string),
		proc:             p,
	}
}

// Requests returns every request the MCP server received at /mcp so far, oldest first.
func (u *AuthedUpstream) Requests(t testing.TB) []UpstreamRequest {
	t.Helper()
	var log struct {
		Requests []UpstreamRequest `json:"requests"`
	}
	mcp, err := url.Parse(u.MCP)
	if err != nil {
		t.Fatalf("harness: %v", err)
	}
	body, err := u.call(http.MethodGet, "http://"+mcp.Host+"/_log", "")
	if err == nil {
		err = json.Unmarshal(body, &log)
	}
	if err != nil {
		t.Fatalf("harness: upstream-authed-mcp log: %v", err)
	}
	return log.Requests
}

// Revoke revokes every grant of sub at the authorization server: its refresh tokens get
// invalid_grant and the MCP server refuses its access tokens with 401 invalid_token.
func (u *AuthedUpstream) Revoke(t testing.TB, sub string) {
	t.Helper()
	if _, err := u.call(http.MethodPost, u.Issuer+"/test/revoke?sub="+url.QueryEscape(sub), u.adminToken); err != nil {
		t.Fatalf("harness: upstream revoke %s: %v", sub, err)
	}
}

// LoginAs makes the authorization server's automatic sign-in pick sub from now on.
func (u *AuthedUpstream) LoginAs(t testing.TB, sub string) {
	t.Helper()
	if _, err := u.call(http.MethodPost, u.Issuer+"/test/login-as?sub="+url.QueryEscape(sub), u.adminToken); err != nil {
		t.Fatalf("harness: upstream login-as %s: %v", sub, err)
	}
}

func (u *AuthedUpstream) call(method, target, token string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, target, nil)
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s %s: %s: %s", method, target, resp.Status, tail(string(body), 512))
	}
	return body, nil
}
