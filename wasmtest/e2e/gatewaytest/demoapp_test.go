package gatewaytest

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/tokensvc/server"
	"github.com/mcpmesh/gateway/wasmtest/e2e/harness"
	"github.com/mcpmesh/gateway/wasmtest/gateway"
	"github.com/mcpmesh/gateway/wasmtest/wasmbuild"
)

// demoStack is the quick start's pattern-3 setup through the local gateway: oidc-provider as
// the identity provider, a second oidc-provider as the upstream OAuth server, the demo MCP
// server (examples/demomcp, with upstream_whoami asking the upstream who its token belongs to)
// behind a plain route and behind two upstream_oauth2 routes (auth_style header and params), the
// demo app (examples/demoapp) behind an mcp.client route, and the LLM API stand-in
// (examples/llmapi) it hands the TE to, each a separate process.
type demoStack struct {
	IDP, Upstream *harness.IDP
	// AuthURL is the authenticate host; AppURL the demo app's route; DemoURL the plain MCP
	// route; UpURL and Up2URL the upstream_oauth2 routes (header, params) on one host.
	AuthURL, AppURL, DemoURL, UpURL, Up2URL string
	// AppBackend and LLMAPI are the processes' own URLs (no gateway).
	AppBackend, LLMAPI string
}

// upstreamUser is the upstream provider's account of the test user.
var upstreamUser = harness.IDPUser{Sub: "alice-upstream", Email: "alice@upstream.example", EmailVerified: true, Name: "Alice at Upstream"}

func startDemoStack(t *testing.T) *demoStack {
	t.Helper()
	d := &demoStack{}
	authL, demoL, upL, appL := listen(t, "127.0.0.1"), listen(t, "127.0.0.2"), listen(t, "127.0.0.4"), listen(t, "127.0.0.3")
	d.AuthURL = "http://" + authL.Addr().String()
	d.DemoURL = "http://" + demoL.Addr().String() + "/mcp"
	upOrigin := "http://" + upL.Addr().String()
	d.UpURL, d.Up2URL = upOrigin+"/mcp", upOrigin+"/mcp2"
	d.AppURL = "http://" + appL.Addr().String()

	d.IDP = harness.StartIDP(t, harness.IDPOptions{})
	upSecret := rand.Text()
	d.Upstream = harness.StartIDP(t, harness.IDPOptions{
		Clients: []harness.IDPClient{
			{ClientID: "gateway-upstream", ClientSecret: upSecret, RedirectURIs: []string{upOrigin + "/.gateway/mcp/oauth2/callback"}, TokenEndpointAuthMethod: "client_secret_basic"},
			{ClientID: "gateway-upstream-params", ClientSecret: upSecret, RedirectURIs: []string{upOrigin + "/.gateway/mcp/oauth2/callback"}, TokenEndpointAuthMethod: "client_secret_post"},
		},
		Users: []harness.IDPUser{upstreamUser},
	})
	mcpBackend := harness.StartExample(t, "demomcp", "-upstream-userinfo", d.Upstream.Issuer+"/me")
	d.LLMAPI = harness.StartExample(t, "llmapi",
		"-allow-origin", "http://"+demoL.Addr().String(), "-allow-origin", upOrigin)
	d.AppBackend = harness.StartExample(t, "demoapp", "-gateway", d.AppURL, "-issuer", d.AuthURL, "-llmapi", d.LLMAPI)

	secret := func() string {
		b := make([]byte, 32)
		rand.Read(b)
		return base64.StdEncoding.EncodeToString(b)
	}
	upstreamRoute := func(name, from, clientID, style string) string {
		return fmt.Sprintf(`
  - name: %s
    from: %s
    to: %s/mcp
    policy:
      allow: {and: [{domain: {is: example.com}}]}
      deny: {and: [{mcp_tool: {not_in: [upstream_whoami, whoami, echo]}}]}
    mcp:
      server:
        upstream_oauth2:
          client_id: %s
          client_secret: %s
          endpoint: {auth_url: %s/auth, token_url: %s/token, auth_style: %s}
          scopes: [openid, email, profile, offline_access]`, name, from, mcpBackend, clientID, upSecret, d.Upstream.Issuer, d.Upstream.Issuer, style)
	}
	yaml := fmt.Sprintf(`
runtime_flags: {mcp: true}
authenticate_service_url: %s
shared_secret: %s
cookie_secret: %s
cookie_expiration: 1h
idp_provider: oidc
idp_provider_url: %s
idp_client_id: %s
idp_client_secret: %s
storage: {type: sqlite, path: %s}
token_service: {check_cache_ttl: 1s}
routes:
  - name: Demo MCP server
    from: %s
    to: %s/mcp
    policy:
      allow: {and: [{domain: {is: example.com}}]}
      deny: {and: [{mcp_tool: {not_in: [echo, add, get-time, whoami, upstream_whoami]}}]}
    mcp: {server: {}}%s%s
  - name: Demo app
    from: %s
    to: %s
    policy: {allow: {and: [{authenticated_user: true}]}}
    mcp: {client: {}}
`, d.AuthURL, secret(), secret(), d.IDP.Issuer, d.IDP.ClientID, d.IDP.ClientSecret,
		filepath.Join(t.TempDir(), "gateway.db"), d.DemoURL, mcpBackend,
		upstreamRoute("Upstream account (header)", d.UpURL, "gateway-upstream", "header"),
		upstreamRoute("Upstream account (params)", d.Up2URL, "gateway-upstream-params", "params"),
		d.AppURL, d.AppBackend)
	cfg, err := config.Parse([]byte(yaml), nil)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	logger := slog.New(slog.NewTextHandler(&testWriter{t: t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ts, err := server.New(ctx, cfg, server.WithLogger(logger))
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
		_ = gw.Serve(ctx, []net.Listener{authL, demoL, upL, appL})
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		gw.Close()
		ts.Close()
	})
	return d
}

// serverState returns the "Upstream account" cell of the servers table's row for url.
func serverState(b *harness.Chromium, url string) string {
	return strings.TrimSpace(b.Text(fmt.Sprintf(`tr.server[data-url=%q] td.state`, url)))
}

// demoCallTool fills in the demo app's tool form and submits it; it returns the outcome's kind
// and text as the page shows them.
func demoCallTool(t *testing.T, b *harness.Chromium, appURL, server, tool, args string) (kind, text string) {
	t.Helper()
	b.Select("#server", server)
	b.Fill("#toolname", tool)
	b.Fill("#arguments", args)
	if u := b.Click("#call", appURL+"/call"); !strings.HasPrefix(u, appURL+"/call") {
		t.Fatalf("after the tool form the browser is at %s", u)
	}
	return b.Attr("#outcome .outcome", "data-kind"), b.Text("#outcome .outcome")
}

// TestDemoApp_Pattern3InChromium drives the demo app in Debian's headless chromium through the
// local gateway, as a person would, and checks what the page shows at each step.
func TestDemoApp_Pattern3InChromium(t *testing.T) {
	d := startDemoStack(t)
	b := harness.StartChromium(t)
	shots := os.Getenv("GATEWAY_E2E_SCREENSHOTS") // a directory for PNGs of each step, when set
	shot := func(name string) {
		if shots != "" {
			b.Screenshot(filepath.Join(shots, name+".png"))
		}
	}

	// Sign-in: the gateway sends the browser through the identity provider and back.
	if status := b.Goto(d.AppURL + "/"); status != http.StatusOK {
		t.Fatalf("the app page answered %d after sign-in (at %s)", status, b.URL())
	}
	if u := b.URL(); u != d.AppURL+"/" {
		t.Fatalf("after sign-in the browser is at %s, want %s/", u, d.AppURL)
	}
	shot("1-signed-in")

	// The identity, verified from the assertion.
	alice := harness.Alice()
	for sel, want := range map[string]string{
		"#identity .name":  alice.Name,
		"#identity .email": alice.Email,
	} {
		if got := strings.TrimSpace(b.Text(sel)); got != want {
			t.Errorf("%s shows %q, want %q", sel, got, want)
		}
	}
	if v := b.Text("#identity .verified"); !strings.Contains(v, "Verified") || !strings.Contains(v, "External Token: received") {
		t.Errorf("the identity section says %q, want it verified and the TE received", v)
	}

	// The servers: the plain one is usable as it is, the upstream ones are not connected.
	if names := b.Texts("tr.server td.server-name"); len(names) != 3 {
		t.Fatalf("the servers table lists %q, want the 3 servers", names)
	}
	for url, want := range map[string]string{d.DemoURL: "connected", d.UpURL: "not connected", d.Up2URL: "not connected"} {
		if got := serverState(b, url); got != want {
			t.Errorf("server %s shows %q, want %q", url, got, want)
		}
	}
	if n := b.Count(fmt.Sprintf(`tr.server[data-url=%q] a.connect`, d.UpURL)); n != 1 {
		t.Errorf("the upstream server has %d Connect links, want 1", n)
	}

	// A tool call through the LLM API stand-in; the text is shown as text, not markup.
	kind, text := demoCallTool(t, b, d.AppURL, d.DemoURL, "echo", `{"text":"hello <b>world</b>"}`)
	if kind != "result" || text != "hello <b>world</b>" {
		t.Errorf("echo shows %s %q, want result %q", kind, text, "hello <b>world</b>")
	}
	if n := b.Count("#outcome b"); n != 0 {
		t.Errorf("the tool's text became markup: %d <b> elements", n)
	}
	shot("2-tool-result")
	// The gateway's identity reaches the MCP server behind it.
	if kind, text := demoCallTool(t, b, d.AppURL, d.DemoURL, "whoami", `{}`); kind != "result" || !strings.Contains(text, alice.Email) {
		t.Errorf("whoami shows %s %q, want a result naming %s", kind, text, alice.Email)
	}

	// A tool the policy denies: the page shows the gateway's refusal.
	kind, text = demoCallTool(t, b, d.AppURL, d.DemoURL, "delete_everything", `{}`)
	if kind != "denied" || !strings.Contains(text, "does not allow the tool") || !strings.Contains(text, "delete_everything") {
		t.Errorf("delete_everything shows %s %q, want the gateway's refusal", kind, text)
	}
	if h := b.Text("#outcome h2"); !strings.Contains(h, "Denied by the gateway") {
		t.Errorf("the outcome heading is %q", h)
	}
	shot("3-denied")

	// Before Connect, the upstream route refuses the call: there is no upstream token.
	if kind, text := demoCallTool(t, b, d.AppURL, d.UpURL, "upstream_whoami", `{}`); kind != "denied" {
		t.Errorf("upstream_whoami before Connect shows %s %q, want denied", kind, text)
	}

	demoAppPattern3ConnectSteps(t, d, b, shot)

	// Straight to the app, not through the gateway, with a forged assertion and a token: 401,
	// and nothing of the forged identity on the page.
	req, _ := http.NewRequest(http.MethodGet, d.AppBackend+"/", nil)
	req.Header.Set("X-Gateway-Assertion", "eyJhbGciOiJub25lIn0.eyJzdWIiOiJtYWxsb3J5IiwiZW1haWwiOiJtYWxsb3J5QGV4YW1wbGUuY29tIn0.")
	req.Header.Set("Authorization", "Bearer forged")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || strings.Contains(string(body), "mallory") {
		t.Errorf("a forged assertion straight to the app: %d %q, want 401", resp.StatusCode, body)
	}
}

// demoAppPattern3ConnectSteps: Connect each upstream server (auth_style header, then params),
// the upstream account through the stand-in, Disconnect.
func demoAppPattern3ConnectSteps(t *testing.T, d *demoStack, b *harness.Chromium, shot func(string)) {
	t.Helper()
	home := d.AppURL + "/"
	wantAccount := func(server string) {
		t.Helper()
		kind, text := demoCallTool(t, b, d.AppURL, server, "upstream_whoami", `{}`)
		if kind != "result" || !strings.Contains(text, `"upstream_sub":"`+upstreamUser.Sub+`"`) || !strings.Contains(text, upstreamUser.Email) {
			t.Fatalf("upstream_whoami on %s shows %s %q, want the upstream account %s", server, kind, text, upstreamUser.Sub)
		}
	}

	// Connect the header-style server: the gateway signs the browser in on the server's host,
	// runs the upstream provider's flow, and sends it back to the app.
	if u := b.Click(fmt.Sprintf(`tr.server[data-url=%q] a.connect`, d.UpURL), home); u != home {
		t.Fatalf("after Connect the browser is at %s, want %s", u, home)
	}
	for url, want := range map[string]string{d.DemoURL: "connected", d.UpURL: "connected", d.Up2URL: "not connected"} {
		if got := serverState(b, url); got != want {
			t.Errorf("after Connect of %s, server %s shows %q, want %q", d.UpURL, url, got, want)
		}
	}
	shot("4-connected")
	// The tool call through the stand-in reaches the server with the user's upstream token.
	wantAccount(d.UpURL)
	shot("5-upstream-account")

	// The params-style server: its own flow, its own token.
	if u := b.Click(fmt.Sprintf(`tr.server[data-url=%q] a.connect`, d.Up2URL), home); u != home {
		t.Fatalf("after the second Connect the browser is at %s, want %s", u, home)
	}
	for _, url := range []string{d.UpURL, d.Up2URL} {
		if got := serverState(b, url); got != "connected" {
			t.Errorf("after both Connects, server %s shows %q, want connected", url, got)
		}
	}
	wantAccount(d.Up2URL)

	// Disconnect: the gateway's confirmation page on the server's host, then its form.
	upOrigin := strings.TrimSuffix(d.UpURL, "/mcp")
	if u := b.Click(fmt.Sprintf(`tr.server[data-url=%q] a.disconnect`, d.UpURL), upOrigin+"/.gateway/mcp/disconnect"); !strings.HasPrefix(u, upOrigin+"/.gateway/mcp/disconnect") {
		t.Fatalf("Disconnect went to %s", u)
	}
	shot("6-disconnect-confirmation")
	if u := b.Click(`form button[type=submit]`, home); u != home {
		t.Fatalf("after the disconnect form the browser is at %s, want %s", u, home)
	}
	for url, want := range map[string]string{d.DemoURL: "connected", d.UpURL: "not connected", d.Up2URL: "not connected"} {
		if got := serverState(b, url); got != want {
			t.Errorf("after Disconnect, server %s shows %q, want %q", url, got, want)
		}
	}
	shot("7-disconnected")
	// The data path follows once the filter's cached decision (with the TI) expires: at most
	// token_service.check_cache_ttl (1 s here) after the disconnect.
	time.Sleep(1500 * time.Millisecond)
	if kind, text := demoCallTool(t, b, d.AppURL, d.UpURL, "upstream_whoami", `{}`); kind != "denied" {
		t.Errorf("upstream_whoami after Disconnect shows %s %q, want denied", kind, text)
	}

	// No page the browser was sent to carried a token in its URL.
	for _, nav := range b.Navigations() {
		if strings.Contains(nav.URL, "access_token") || strings.Contains(nav.URL, "refresh_token") {
			t.Errorf("a navigation carried a token: %s", nav.URL)
		}
	}
}
