package gatewaytest

// Red-team tests of the token service that span components: the real filter.wasm in the
// local gateway, the token service, and (for the browser flow) the real OpenID provider.

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
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/mcpmesh/gateway/shared/checkapi"
	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/tokensvc/secret"
	"github.com/mcpmesh/gateway/tokensvc/server"
	"github.com/mcpmesh/gateway/tokensvc/session"
	"github.com/mcpmesh/gateway/tokensvc/store"
	"github.com/mcpmesh/gateway/wasmtest/e2e/harness"
	"github.com/mcpmesh/gateway/wasmtest/gateway"
	"github.com/mcpmesh/gateway/wasmtest/wasmbuild"
)

// Attack, step 1: a user authorizes an MCP client at the gateway in a browser (a real sign-in
// at the OpenID provider, consent, code, token). A client that shares that browser's cookie
// store (an embedded webview, an Electron app) then calls the MCP URL. No gateway session
// cookie may go along: the filter forwards cookies on mcp.server routes, so the MCP server's
// upstream would receive it, and whoever holds the MCP host's cookie can approve any client
// as the user at the authorization endpoint (the authenticate host's one signs in anywhere).
func TestRedTeam_BrowserNeverSendsTheMCPHostSessionCookieToTheMCPServer(t *testing.T) {
	s := startStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	reg, _ := json.Marshal(map[string]any{
		"client_name": "red team", "redirect_uris": []string{redirectURI}, "token_endpoint_auth_method": "none",
		"grant_types": []string{"authorization_code", "refresh_token"}, "response_types": []string{"code"},
	})
	resp, err := http.Post(s.MCPOrigin+"/.gateway/mcp/register", "application/json", bytes.NewReader(reg))
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		ClientID string `json:"client_id"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&out)
	resp.Body.Close()
	cfg := &oauth2.Config{ClientID: out.ClientID, RedirectURL: redirectURI, Endpoint: oauth2.Endpoint{
		AuthURL: s.MCPOrigin + "/.gateway/mcp/authorize", TokenURL: s.MCPOrigin + "/.gateway/mcp/token", AuthStyle: oauth2.AuthStyleInParams,
	}}
	verifier := oauth2.GenerateVerifier()
	res := oauth2.SetAuthURLParam("resource", s.OpenURL)
	b := harness.NewBrowser()
	cb, err := b.Authorize(ctx, cfg.AuthCodeURL("st", oauth2.S256ChallengeOption(verifier), res), redirectURI)
	if err != nil {
		t.Fatalf("authorize: %v\nhistory %v", err, b.History())
	}
	if _, err := cfg.Exchange(ctx, cb.Query().Get("code"), oauth2.VerifierOption(verifier), res); err != nil {
		t.Fatalf("token: %v", err)
	}
	cookieFor := func(raw, name string) *http.Cookie {
		u, _ := url.Parse(raw)
		for _, c := range b.Client.Jar.Cookies(u) {
			if c.Name == name {
				return c
			}
		}
		return nil
	}
	if cookieFor(s.MCPOrigin+"/.gateway/mcp/authorize", checkapi.SessionCookie) == nil {
		t.Fatal("setup: the browser holds no session cookie for the MCP host's gateway paths")
	}
	// The authenticate host shares the MCP host's address here (cookies ignore ports): its
	// session cookie, the key to every route host, must not travel to the MCP server either.
	if cookieFor(s.AuthURL+"/.gateway/authenticate/sign_in", session.AuthnCookie) == nil {
		t.Fatal("setup: the browser holds no authenticate session cookie")
	}
	for _, u := range []string{s.OpenURL, s.RestrictedURL, s.MCPOrigin + "/"} {
		for _, name := range []string{checkapi.SessionCookie, session.AuthnCookie} {
			if cookieFor(u, name) != nil {
				t.Errorf("the browser sends %s to %s", name, u)
			}
		}
	}
}

// recorder is an upstream that records the headers of every request it receives.
type recorder struct {
	mu   sync.Mutex
	seen []http.Header
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec.mu.Lock()
	rec.seen = append(rec.seen, r.Header.Clone())
	rec.mu.Unlock()
	_, _ = io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
}

func (rec *recorder) headers() []http.Header {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]http.Header(nil), rec.seen...)
}

// Attack, step 2: on a host that serves an mcp.client application at / and an MCP server at
// /mcp (integration pattern 3, docs/README.md: the application's own page calls its MCP server), the browser
// sends the session cookie to /mcp with every same-origin request. The filter must strip it
// there as it does on browser routes; otherwise the MCP server's upstream can replay it.
// (The token service cannot scope the cookie away from /mcp on such a host: the application at
// / needs it.)
func TestRedTeam_SessionCookieIsStrippedOnMCPServerRoutes(t *testing.T) {
	up := &recorder{}
	upstream := httptest.NewServer(up)
	t.Cleanup(upstream.Close)
	authL, appL := listen(t, "127.0.0.1"), listen(t, "127.0.0.4")
	appOrigin := "http://" + appL.Addr().String()
	secret32 := func() string {
		b := make([]byte, 32)
		_, _ = rand.Read(b)
		return base64.StdEncoding.EncodeToString(b)
	}
	cfg, err := config.Parse(fmt.Appendf(nil, `
runtime_flags: {mcp: true}
authenticate_service_url: http://%s
shared_secret: %s
cookie_secret: %s
idp_provider: oidc
idp_provider_url: http://127.0.0.1:9/never-contacted
idp_client_id: gw
idp_client_secret: s3cret
storage: {type: memory}
routes:
  - name: App
    from: %s
    to: %s
    policy: {allow: {and: [{authenticated_user: true}]}}
    mcp: {client: {}}
  - name: App tools
    from: %s/mcp
    to: %s/mcp
    policy: {allow: {and: [{authenticated_user: true}]}}
    mcp: {server: {}}
`, authL.Addr(), secret32(), secret32(), appOrigin, upstream.URL, appOrigin, upstream.URL), nil)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ts, err := server.New(ctx, cfg, server.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	gw, err := gateway.New(ctx, gateway.Options{Config: cfg, Module: wasmbuild.Module(t),
		TokenService: gateway.TokenService{Public: ts.PublicHandler(), Internal: ts.InternalHandler()}})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = gw.Serve(ctx, []net.Listener{authL, appL}) }()
	t.Cleanup(func() { cancel(); <-done; gw.Close(); ts.Close() })

	// The user's browser session on the app host, and the External Token the app backend got.
	now := time.Now()
	sess := store.Session{ID: secret.NewToken(), Subject: "alice", Email: "alice@example.com", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	if err := ts.Store().CreateSession(ctx, sess); err != nil {
		t.Fatal(err)
	}
	cookie := secret.NewToken()
	host := strings.TrimPrefix(appOrigin, "http://")
	if err := ts.Store().CreateBrowserCookie(ctx, store.BrowserCookie{Hash: secret.Hash(cookie), SessionID: sess.ID, Host: host, CreatedAt: now, ExpiresAt: sess.ExpiresAt}); err != nil {
		t.Fatal(err)
	}
	te, _, err := ts.OAuth().IssueClientToken(ctx, sess)
	if err != nil {
		t.Fatal(err)
	}
	// The app's page calls its MCP server; the browser adds the cookies of the origin.
	req, _ := http.NewRequest(http.MethodPost, appOrigin+"/mcp", strings.NewReader(initialize))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+te)
	req.Header.Set("Cookie", checkapi.SessionCookie+"="+cookie+"; theme=dark")
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("MCP request: %d", resp.StatusCode)
	}
	seen := up.headers()
	if len(seen) != 1 {
		t.Fatalf("upstream got %d requests", len(seen))
	}
	if c := seen[0].Get("Cookie"); strings.Contains(c, checkapi.SessionCookie) || strings.Contains(c, cookie) {
		t.Errorf("the MCP server upstream received the gateway session cookie: %q", c)
	}
	if a := seen[0].Get("Authorization"); a != "" {
		t.Errorf("the MCP server upstream received Authorization %q", a)
	}
}
