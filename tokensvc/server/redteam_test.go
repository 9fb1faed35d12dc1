package server

// Red-team tests: each one performs an attack on the token service's public or internal
// handlers and checks that it fails.

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/shared/checkapi"
	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/tokensvc/store/memory"
)

// redTeamPolicyYAML has MCP server routes whose policies admit different users.
const redTeamPolicyYAML = `
runtime_flags: {mcp: true}
authenticate_service_url: https://auth.example.com
shared_secret: ZGVtby1vbmx5LXNoYXJlZC1zZWNyZXQtMzItYnl0ZXM=
cookie_secret: ZGVtby1vbmx5LWNvb2tpZS1zZWNyZXQtMzItYnl0ZXM=
idp_provider: oidc
idp_provider_url: https://idp.example.com
idp_client_id: gw
idp_client_secret: s3cret
storage: {type: memory}
routes:
  - name: App
    from: https://app.example.com
    to: http://app.internal
    policy: {allow: {and: [{authenticated_user: true}]}}
    mcp: {client: {}}
  - name: Open
    from: https://mcp.example.com/open
    to: http://open.internal/mcp
    policy: {allow: {and: [{authenticated_user: true}]}}
    mcp: {server: {}}
  - name: Admins
    from: https://mcp.example.com/admin
    to: http://admin.internal/mcp
    policy: {allow: {and: [{email: {is: root@example.com}}]}}
    mcp: {server: {}}
  - name: Engineering
    from: https://mcp.example.com/eng
    to: http://eng.internal/mcp
    policy: {allow: {and: [{groups: {has: eng}}]}}
    mcp: {server: {}}
  - name: R&D claim
    from: https://mcp.example.com/rnd
    to: http://rnd.internal/mcp
    policy: {allow: {and: [{claim/dept: r&d}]}}
    mcp: {server: {}}
  - name: Tool allowlist
    from: https://mcp.example.com/tools
    to: http://tools.internal/mcp
    policy:
      allow: {and: [{domain: {is: example.com}}]}
      deny: {and: [{mcp_tool: {not_in: [search]}}]}
    mcp: {server: {}}
  - name: Everyone but alice
    from: https://mcp.example.com/noalice
    to: http://noalice.internal/mcp
    policy:
      allow: {and: [{authenticated_user: true}]}
      deny: {and: [{user: {is: alice}}]}
    mcp: {server: {}}
  - name: No policy
    from: https://mcp.example.com/nopolicy
    to: http://nopolicy.internal/mcp
    mcp: {server: {}}
`

func newRedTeamEnv(t *testing.T, yaml string) *testEnv {
	t.Helper()
	cfg, err := config.Parse([]byte(yaml), nil)
	if err != nil {
		t.Fatal(err)
	}
	e := &testEnv{t: t, cfg: cfg, store: memory.New(), clock: &testClock{t: time.Unix(1_700_000_000, 0)}}
	e.srv, err = New(context.Background(), cfg, WithStore(e.store), WithConnector(nopConnector{}),
		WithClock(e.clock.now), WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.srv.Close() })
	return e
}

// Attack: a signed-in user lists the MCP servers to learn of servers (names, URLs) that
// their policy does not let them use. The listing must show only the servers the user's
// identity passes the route policy of (for a request that is not a tool call).
func TestRedTeam_RouteListingHidesServersThePolicyDenies(t *testing.T) {
	t.Parallel()
	e := newRedTeamEnv(t, redTeamPolicyYAML)
	// alice: example.com, group eng, claim dept=r&d (see testEnv.session).
	alice := e.session("alice")
	tok := e.token(alice, "", time.Hour)
	h := http.Header{}
	h.Set("Authorization", "Bearer "+tok)
	resp := e.public(http.MethodGet, "https://app.example.com"+paths.Routes, h)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("listing: status %d", resp.StatusCode)
	}
	var list RouteListing
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range list.Servers {
		names = append(names, s.Name)
	}
	want := []string{"Open", "Engineering", "R&D claim", "Tool allowlist"}
	if !slices.Equal(names, want) {
		t.Fatalf("alice sees %q, want %q (Admins, Everyone but alice and No policy deny her)", names, want)
	}
}

// Attack: the filter only ever sends a bearer token on MCP server routes; a check call that
// presents a bearer token for an mcp.client or plain route (a confused or compromised caller
// holding the filter key, or a future filter bug) must not get an identity and an assertion
// for a browser application. Those routes take the browser session only.
func TestRedTeam_CheckRefusesBearerTokenOnBrowserRoutes(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	s := e.session("alice")
	for name, tc := range map[string]struct{ route, host, resource string }{
		"client route, unbound token":     {appRoute, "app.example.com", ""},
		"client route, token bound to it": {appRoute, "app.example.com", appRoute},
		"plain route, unbound token":      {plainRoute, "plain.example.com", ""},
		"plain route, token bound to it":  {plainRoute, "plain.example.com", plainRoute},
	} {
		tok := e.token(s, tc.resource, time.Hour)
		status, resp := e.check(checkapi.Request{RouteID: tc.route, Host: tc.host, Token: tok})
		if status != http.StatusUnauthorized || resp.Status != checkapi.StatusInvalidToken || resp.Assertion != "" || resp.Identity != nil {
			t.Errorf("%s: status %d %+v, want 401 invalid_token without identity or assertion", name, status, resp)
		}
	}
	// An MCP server route still takes it.
	if status, _ := e.check(checkapi.Request{RouteID: demoRoute, Host: "mcp.example.com", Token: e.token(s, "", time.Hour)}); status != http.StatusOK {
		t.Fatalf("server route: status %d", status)
	}
}

// Attack: a client sends X-Request-Id with characters the service does not accept as a
// request ID. The service then logs the request under a fresh ID, but the authorization
// server's error page (and its own log records) showed the client's value, so an attacker
// could make a victim's error page, and log records, carry another request's ID. Every
// place must use the one ID the service chose, the one it returns in X-Request-Id.
func TestRedTeam_ErrorPageShowsTheServiceRequestIDNotTheClients(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	h := http.Header{}
	h.Set("X-Request-Id", "other-request/forged<id>")
	resp := e.public(http.MethodGet, "https://mcp.example.com"+paths.Authorize+"?client_id=unknown", h)
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("status %d", resp.StatusCode)
	}
	var body [8192]byte
	n, _ := resp.Body.Read(body[:])
	m := regexp.MustCompile(`Request ID: <code>([^<]*)</code>`).FindSubmatch(body[:n])
	got := resp.Header.Get(RequestIDHeader)
	if m == nil || string(m[1]) != got || got == "" {
		t.Fatalf("page request ID %q, response X-Request-Id %q: they must be the service's one ID", m, got)
	}
}
