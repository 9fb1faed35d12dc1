package gatewaytest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/tokensvc/idp/githubtest"
	"github.com/mcpmesh/gateway/tokensvc/server"
	"github.com/mcpmesh/gateway/wasmtest/e2e/harness"
	"github.com/mcpmesh/gateway/wasmtest/gateway"
	"github.com/mcpmesh/gateway/wasmtest/wasmbuild"
)

// e2eProvider is a built-in provider as the end-to-end test plays it: oidc-provider set up the
// way that provider publishes its issuer and claims (or, for github, the GitHub-compatible
// test server), and what the gateway configuration adds.
type e2eProvider struct {
	name string
	// idp configures oidc-provider (issuer path, groups claim, claims by scope).
	idp harness.IDPOptions
	// aliceClaims are added to alice's and bob's claims (azure's tid, apple's string
	// email_verified).
	claims map[string]any
	// yaml is added to the gateway configuration (idp_scopes where the provider needs a
	// scope for groups).
	yaml string
	// group is the group the groups policy asks for; "" means the provider sends no groups
	// (alice is then refused by the groups policy too).
	group string
	// formPost says the provider answers with response_mode=form_post (a POST callback).
	formPost bool
}

const azureTenant = "9188040d-6c67-4c5b-b112-36a304b66dad"

var withGroupsScope = "idp_scopes: openid, profile, email, offline_access, groups\n"

var e2eProviders = []e2eProvider{
	{name: "oidc", yaml: withGroupsScope, group: "engineering"},
	{name: "okta", idp: harness.IDPOptions{IssuerPath: "/oauth2/default"}, yaml: withGroupsScope, group: "engineering"},
	// Auth0's issuer ends in a slash; groups come from a post-login Action, in every token.
	{name: "auth0", idp: harness.IDPOptions{IssuerPath: "/", ScopeClaims: scopeClaims("groups")}, group: "engineering"},
	// Azure: the tenant's issuer, tid in every token, groups from groupMembershipClaims.
	{name: "azure", idp: harness.IDPOptions{IssuerPath: "/" + azureTenant + "/v2.0", ScopeClaims: scopeClaims("tid", "groups")},
		claims: map[string]any{"tid": azureTenant}, group: "engineering"},
	// Cognito: the user pool's issuer, user pool groups as cognito:groups; no offline_access.
	{name: "cognito", idp: harness.IDPOptions{IssuerPath: "/us-east-1_Ab12Cd34", GroupsClaim: "cognito:groups", ScopeClaims: scopeClaims("cognito:groups")},
		group: "engineering"},
	{name: "onelogin", idp: harness.IDPOptions{IssuerPath: "/oidc/2"}, yaml: withGroupsScope, group: "engineering"},
	{name: "ping", idp: harness.IDPOptions{IssuerPath: "/5c1f6e2a-env/as", ScopeClaims: scopeClaims("groups")}, group: "engineering"},
	{name: "gitlab", idp: harness.IDPOptions{ScopeClaims: scopeClaims("groups")}, group: "engineering"},
	{name: "google"},
	{name: "apple", claims: map[string]any{"email_verified": "true"}, formPost: true},
	{name: "github", group: "acme/engineering"},
}

// scopeClaims releases extra claims with the openid scope, as providers that put them in
// every ID token do.
func scopeClaims(extra ...string) map[string][]string {
	return map[string][]string{
		"openid":  append([]string{"sub"}, extra...),
		"email":   {"email", "email_verified"},
		"profile": {"name"},
	}
}

// TestProviders_SignInEndToEnd signs in through the local gateway with the MCP TypeScript
// SDK client (its own OAuth flow: discovery, registration, authorization with PKCE, token,
// tools/call, refresh) at every built-in provider, and checks the groups each sends through a
// groups policy: alice (engineering) is let in, bob (sales) is kept out. Providers that send no
// groups (google, apple) keep alice out of the groups route too and let her into the route
// that asks only for a signed-in user.
func TestProviders_SignInEndToEnd(t *testing.T) {
	everything := harness.StartEverythingServer(t)
	for _, p := range e2eProviders {
		t.Run(p.name, func(t *testing.T) {
			runProviderE2E(t, p, everything)
		})
	}
}

func runProviderE2E(t *testing.T, p e2eProvider, everything string) {
	var (
		providerURL, clientID, clientSecret string
		loginAs                             func(sub string)
		idpProc                             *harness.IDP
	)
	if p.name == "github" {
		clientSecret = rand.Text()
		gh := githubtest.New(t, githubtest.Options{ClientID: "gateway-e2e", ClientSecret: clientSecret, RedirectURI: harness.DefaultRedirectURI})
		providerURL, clientID = gh.URL, "gateway-e2e"
		loginAs = func(sub string) { gh.LoginAs(sub) }
	} else {
		opts := p.idp
		alice, bob := harness.Alice(), harness.Bob()
		alice.Claims, bob.Claims = p.claims, p.claims
		opts.Users = []harness.IDPUser{alice, bob}
		idpProc = harness.StartIDP(t, opts)
		providerURL, clientID, clientSecret = idpProc.Issuer, idpProc.ClientID, idpProc.ClientSecret
		loginAs = func(sub string) { idpProc.LoginAs(t, sub) }
	}
	if p.name == "auth0" && !strings.HasSuffix(providerURL, "/") {
		t.Fatalf("auth0's issuer must end in a slash: %s", providerURL)
	}

	authL, mcpL := listen(t, "127.0.0.1"), listen(t, "127.0.0.1")
	authURL, mcpOrigin := "http://"+authL.Addr().String(), "http://"+mcpL.Addr().String()
	group := p.group
	if group == "" {
		group = "engineering"
	}
	secret := func() string {
		b := make([]byte, 32)
		rand.Read(b)
		return base64.StdEncoding.EncodeToString(b)
	}
	secretFile := filepath.Join(t.TempDir(), "idp-secret")
	if err := os.WriteFile(secretFile, []byte(clientSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	yaml := fmt.Sprintf(`
runtime_flags: {mcp: true}
authenticate_service_url: %s
shared_secret: %s
cookie_secret: %s
idp_provider: %s
idp_provider_url: %s
idp_client_id: %s
idp_client_secret_file: %s
%sauthorize_log_fields: [request-id, user, email, allow, allow-why-true, allow-why-false, mcp-method]
storage: {type: memory}
routes:
  - name: Groups
    from: %s/groups
    to: %s
    policy: {allow: {and: [{groups: {has: %q}}]}}
    mcp: {server: {}}
  - name: Open
    from: %s/open
    to: %s
    policy: {allow: {and: [{authenticated_user: true}]}}
    mcp: {server: {}}
`, authURL, secret(), secret(), p.name, providerURL, clientID, secretFile, p.yaml, mcpOrigin, everything, group, mcpOrigin, everything)
	cfg, err := config.Parse([]byte(yaml), nil)
	if err != nil {
		t.Fatalf("config: %v\n%s", err, yaml)
	}
	records := &lockedBuffer{}
	logs := &lockedBuffer{}
	startProviderGateway(t, cfg, records, logs, authL, mcpL)

	run := func(user, route string) *harness.ClientResult {
		t.Helper()
		loginAs(user)
		res, err := harness.RunTSClient(t, harness.ClientOptions{URL: mcpOrigin + route, Tool: "test_simple_text", NoRefresh: route != "/open" || user != "alice"})
		if err != nil && res == nil {
			t.Fatalf("%s at %s: %v", user, route, err)
		}
		return res
	}

	// alice signs in; the TS client completes its flow (with a refresh) on the open route.
	res := run("alice", "/open")
	if !res.OK || !res.Refreshed || res.Call == nil || res.Call.IsError {
		t.Fatalf("alice at /open: %+v\nbrowser: %s\nlogs: %s", res, strings.Join(res.Browser, "\n"), logs.String())
	}
	if p.formPost {
		if !slices.ContainsFunc(res.Browser, func(l string) bool { return strings.HasPrefix(l, "POST "+authURL+"/oauth2/callback ") }) {
			t.Errorf("no form_post callback (POST %s/oauth2/callback) in the browser's requests:\n%s", authURL, strings.Join(res.Browser, "\n"))
		}
	}
	if p.name != "github" && !slices.ContainsFunc(res.Browser, func(l string) bool { return strings.HasPrefix(l, "GET "+strings.TrimSuffix(providerURL, "/")+"/auth ") }) {
		t.Errorf("the browser did not go to the provider's authorization endpoint under %s:\n%s", providerURL, strings.Join(res.Browser, "\n"))
	}

	// Cognito is asked for no offline_access and issues no refresh token here: the sign-in
	// warns with its fix. Every other OpenID provider here returned one: no warning.
	warned := strings.Contains(logs.String(), "issued no refresh token")
	if want := p.name == "cognito"; warned != want {
		t.Errorf("no-refresh-token warning: %v, want %v", warned, want)
	}
	if warned && !strings.Contains(logs.String(), "ALLOW_REFRESH_TOKEN_AUTH") {
		t.Errorf("the warning does not name cognito's fix:\n%s", logs.String())
	}

	// The groups policy: alice in where the provider sends groups, bob out everywhere.
	res = run("alice", "/groups")
	if p.group != "" {
		if !res.OK || res.Call == nil || res.Call.IsError {
			t.Errorf("alice at /groups (group %s): %+v\nrecords: %s", group, res, records.String())
		}
	} else if res.OK {
		t.Errorf("alice at /groups: allowed, but %s sends no groups", p.name)
	}
	res = run("bob", "/groups")
	if res.OK || slices.Contains(res.Steps, "tools/list") {
		t.Errorf("bob at /groups: let in: %+v", res)
	}
	if !slices.Contains(res.Steps, "token") {
		t.Errorf("bob did not sign in (the refusal must come from the policy): steps %v, error %s", res.Steps, res.Error)
	}
	wantDenied := []string{"bob"}
	if p.group == "" {
		wantDenied = append(wantDenied, "alice")
	}
	for _, who := range wantDenied {
		if !hasRecord(records.String(), who, "groups-unauthorized") {
			t.Errorf("no record denying %s with groups-unauthorized:\n%s", who, records.String())
		}
	}
	if p.group != "" && !hasRecordAllowed(records.String(), "alice", "groups-ok") {
		t.Errorf("no record allowing alice with groups-ok:\n%s", records.String())
	}
}

// hasRecord reports whether an authorization record of user (by email) is a denial naming
// reason.
func hasRecord(records, user, reason string) bool {
	for _, line := range strings.Split(records, "\n") {
		var r map[string]any
		if json.Unmarshal([]byte(line), &r) != nil {
			continue
		}
		email, _ := r["email"].(string)
		if strings.HasPrefix(email, user+"@") && r["allow"] == false && strings.Contains(fmt.Sprint(r["allow-why-false"]), reason) {
			return true
		}
	}
	return false
}

func hasRecordAllowed(records, user, reason string) bool {
	for _, line := range strings.Split(records, "\n") {
		var r map[string]any
		if json.Unmarshal([]byte(line), &r) != nil {
			continue
		}
		email, _ := r["email"].(string)
		if strings.HasPrefix(email, user+"@") && r["allow"] == true && strings.Contains(fmt.Sprint(r["allow-why-true"]), reason) {
			return true
		}
	}
	return false
}

// startProviderGateway runs the token service and the local gateway for cfg on the two
// listeners; authorization records go to records (one JSON object a line), other logs to
// logs.
func startProviderGateway(t *testing.T, cfg *config.Config, records, logs io.Writer, ls ...net.Listener) {
	t.Helper()
	startProviderGatewayAt(t, cfg, time.Now, records, logs, ls...)
}

// startProviderGatewayAt is startProviderGateway with the token service's clock.
func startProviderGatewayAt(t *testing.T, cfg *config.Config, now func() time.Time, records, logs io.Writer, ls ...net.Listener) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	logger := slog.New(gateway.RecordHandler(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}), records))
	ts, err := server.New(ctx, cfg, server.WithLogger(logger), server.WithClock(now))
	if err != nil {
		cancel()
		t.Fatalf("token service: %v", err)
	}
	gw, err := gateway.New(ctx, gateway.Options{
		Config:       cfg,
		Module:       wasmbuild.Module(t),
		TokenService: gateway.TokenService{Public: ts.PublicHandler(), Internal: ts.InternalHandler()},
		Logger:       logger,
	})
	if err != nil {
		cancel()
		t.Fatalf("gateway: %v", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = gw.Serve(ctx, ls)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		gw.Close()
		ts.Close()
		if t.Failed() {
			t.Logf("logs:\n%s", logs)
		}
	})
}

// lockedBuffer is a bytes.Buffer safe for concurrent writes of whole lines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestProviders_DownProviderAnswers503UntilBack: GitHub (the test server) is down when the
// service starts, comes back, and goes down again later. The service keeps running; while the
// provider is down, sign-in answers the 503 page (not a redirect to a provider that does not
// answer), and once it is back sign-in works again.
func TestProviders_DownProviderAnswers503UntilBack(t *testing.T) {
	everything := harness.StartEverythingServer(t)
	secretValue := rand.Text()
	gh := githubtest.New(t, githubtest.Options{ClientID: "gateway-e2e", ClientSecret: secretValue, RedirectURI: harness.DefaultRedirectURI})
	gh.SetDown(true)
	authL, mcpL := listen(t, "127.0.0.1"), listen(t, "127.0.0.1")
	authURL, mcpOrigin := "http://"+authL.Addr().String(), "http://"+mcpL.Addr().String()
	cfg, err := config.Parse([]byte(fmt.Sprintf(`
runtime_flags: {mcp: true}
authenticate_service_url: %s
shared_secret: %s
cookie_secret: %s
idp_provider: github
idp_provider_url: %s
idp_client_id: gateway-e2e
idp_client_secret: %s
storage: {type: memory}
routes:
  - from: %s/mcp
    to: %s
    policy: {allow: {and: [{groups: {has: acme/engineering}}]}}
    mcp: {server: {}}
`, authURL, randomKey(), randomKey(), gh.URL, secretValue, mcpOrigin, everything)), nil)
	if err != nil {
		t.Fatal(err)
	}
	var offset atomic.Int64
	now := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	logs := &lockedBuffer{}
	startProviderGatewayAt(t, cfg, now, io.Discard, logs, authL, mcpL)
	signIn := func() *harness.ClientResult {
		res, _ := harness.RunTSClient(t, harness.ClientOptions{URL: mcpOrigin + "/mcp", Tool: "test_simple_text", NoRefresh: true})
		return res
	}
	unavailable := func(when string, res *harness.ClientResult) {
		t.Helper()
		if res.OK || !strings.Contains(res.Error, "answered 503") || !strings.Contains(res.Error, "<title>Sign-in is unavailable</title>") {
			t.Fatalf("%s: %+v", when, res)
		}
		if slices.ContainsFunc(res.Browser, func(l string) bool { return strings.Contains(l, gh.URL) }) {
			t.Errorf("%s: the browser was sent to the provider that is down:\n%s", when, strings.Join(res.Browser, "\n"))
		}
	}
	unavailable("down at start-up", signIn())
	gh.SetDown(false)
	offset.Add(int64(3 * time.Second)) // past the retry interval
	if res := signIn(); !res.OK {
		t.Fatalf("provider back: %+v\nlogs: %s", res, logs)
	}
	gh.SetDown(true)
	offset.Add(int64(11 * time.Second)) // past the health interval
	unavailable("down later", signIn())
	gh.SetDown(false)
	offset.Add(int64(3 * time.Second))
	if res := signIn(); !res.OK {
		t.Fatalf("provider back again: %+v", res)
	}
}

// TestProviders_OIDCProviderDownAnswers503UntilBack is the same for an OpenID provider
// (oidc-provider, okta's issuer shape): down before the first discovery, back, down again
// later, back.
func TestProviders_OIDCProviderDownAnswers503UntilBack(t *testing.T) {
	everything := harness.StartEverythingServer(t)
	idpProc := harness.StartIDP(t, harness.IDPOptions{IssuerPath: "/oauth2/default"})
	idpProc.SetDown(t, true)
	authL, mcpL := listen(t, "127.0.0.1"), listen(t, "127.0.0.1")
	authURL, mcpOrigin := "http://"+authL.Addr().String(), "http://"+mcpL.Addr().String()
	cfg, err := config.Parse([]byte(fmt.Sprintf(`
runtime_flags: {mcp: true}
authenticate_service_url: %s
shared_secret: %s
cookie_secret: %s
idp_provider: okta
idp_provider_url: %s
idp_client_id: %s
idp_client_secret: %s
storage: {type: memory}
routes:
  - from: %s/mcp
    to: %s
    policy: {allow: {and: [{authenticated_user: true}]}}
    mcp: {server: {}}
`, authURL, randomKey(), randomKey(), idpProc.Issuer, idpProc.ClientID, idpProc.ClientSecret, mcpOrigin, everything)), nil)
	if err != nil {
		t.Fatal(err)
	}
	var offset atomic.Int64
	now := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	logs := &lockedBuffer{}
	startProviderGatewayAt(t, cfg, now, io.Discard, logs, authL, mcpL)
	signIn := func() *harness.ClientResult {
		res, _ := harness.RunTSClient(t, harness.ClientOptions{URL: mcpOrigin + "/mcp", Tool: "test_simple_text", NoRefresh: true})
		return res
	}
	unavailable := func(when string, res *harness.ClientResult) {
		t.Helper()
		if res.OK || !strings.Contains(res.Error, "answered 503") || !strings.Contains(res.Error, "<title>Sign-in is unavailable</title>") {
			t.Fatalf("%s: %+v", when, res)
		}
		if slices.ContainsFunc(res.Browser, func(l string) bool { return strings.Contains(l, idpProc.Issuer) }) {
			t.Errorf("%s: the browser was sent to the provider that is down:\n%s", when, strings.Join(res.Browser, "\n"))
		}
	}
	unavailable("down at start-up", signIn())
	idpProc.SetDown(t, false)
	offset.Add(int64(3 * time.Second))
	if res := signIn(); !res.OK {
		t.Fatalf("provider back: %+v\nlogs: %s", res, logs)
	}
	idpProc.SetDown(t, true)
	offset.Add(int64(11 * time.Second))
	unavailable("down later", signIn())
	idpProc.SetDown(t, false)
	offset.Add(int64(3 * time.Second))
	if res := signIn(); !res.OK {
		t.Fatalf("provider back again: %+v", res)
	}
}
