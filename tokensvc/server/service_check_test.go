package server

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/shared/checkapi"
	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/tokensvc/secret"
	"github.com/mcpmesh/gateway/tokensvc/store"
	"github.com/mcpmesh/gateway/tokensvc/store/memory"
)

// The check API gives a service identity's token (client credentials) the identity
// {sub: client:<id>} with no email, name or groups and its client ID, and an assertion with
// that subject; a user's token carries its client ID too.
func TestCheck_ServiceIdentityAndClientID(t *testing.T) {
	t.Parallel()
	secretFile := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secretFile, []byte("0123456789abcdef0123456789abcdef"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse([]byte(testConfigYAML+`
mcp_clients:
  - client_id: ci-agent
    client_secret_file: `+secretFile+`
    grant_types: [client_credentials]
    routes: [`+demoRoute+`]
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	e := &testEnv{t: t, cfg: cfg, store: memory.New(), clock: &testClock{t: time.Unix(1_700_000_000, 0)}}
	e.srv, err = New(context.Background(), cfg, WithStore(e.store), WithConnector(newIDP()), WithClock(e.clock.now), WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.srv.Close() })

	tok := secret.NewToken()
	now := e.clock.now()
	if err := e.store.CreateAccessToken(context.Background(), store.AccessToken{
		Hash: secret.Hash(tok), ClientID: "ci-agent", Subject: "client:ci-agent", Scope: "mcp",
		Resource: demoRoute, CreatedAt: now, ExpiresAt: now.Add(time.Hour),
	}); err != nil {
		t.Fatal(err)
	}
	status, resp := e.check(checkapi.Request{RouteID: demoRoute, Host: "mcp.example.com", Token: tok})
	if status != 200 || resp.Identity == nil {
		t.Fatalf("status %d %+v", status, resp)
	}
	if id := resp.Identity; id.Subject != "client:ci-agent" || id.ClientID != "ci-agent" || id.Email != "" || id.Name != "" || len(id.Groups) != 0 {
		t.Errorf("identity %+v", id)
	}
	if claims := verifyAssertion(t, e, resp.Assertion, "mcp.example.com"); claims["sub"] != "client:ci-agent" {
		t.Errorf("assertion claims %v", claims)
	}
	if resp.ExpiresAt > now.Add(time.Hour).Unix() {
		t.Errorf("bundle outlives the token: %d", resp.ExpiresAt)
	}
	if status, _ := e.check(checkapi.Request{RouteID: otherRoute, Host: "mcp.example.com", Token: tok}); status != 401 {
		t.Errorf("at another route: %d", status)
	}
	// A session-less token whose subject merely looks like a service's is no service token.
	forged := secret.NewToken()
	_ = e.store.CreateAccessToken(context.Background(), store.AccessToken{Hash: secret.Hash(forged), ClientID: "other", Subject: "client:ci-agent", CreatedAt: now, ExpiresAt: now.Add(time.Hour)})
	if status, _ := e.check(checkapi.Request{RouteID: demoRoute, Host: "mcp.example.com", Token: forged}); status != 401 {
		t.Errorf("look-alike service token: %d", status)
	}
	// A user's token carries the client it was issued to.
	s := e.session("alice")
	_, resp = e.check(checkapi.Request{RouteID: demoRoute, Host: "mcp.example.com", Token: e.token(s, demoRoute, time.Hour)})
	if resp.Identity == nil || resp.Identity.Subject != "alice" || resp.Identity.ClientID != "client-1" {
		t.Errorf("user identity %+v", resp.Identity)
	}
}
