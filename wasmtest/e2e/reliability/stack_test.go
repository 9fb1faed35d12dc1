package reliability

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
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/tokensvc/server"
	"github.com/mcpmesh/gateway/wasmtest/e2e/harness"
	"github.com/mcpmesh/gateway/wasmtest/gateway"
	"github.com/mcpmesh/gateway/wasmtest/wasmbuild"
)

// full reports whether the whole suite runs (make reliability) rather than its short version.
func full() bool { return os.Getenv("GATEWAY_RELIABILITY") == "full" }

// scale returns short, or long under make reliability.
func scale(short, long int) int {
	if full() {
		return long
	}
	return short
}

// rstack is a gateway (filter.wasm in the wazero host) in front of a stub MCP server, with a
// real OpenID provider and a token service in-process or remote.
type rstack struct {
	IDP                        *harness.IDP
	AuthURL, MCPOrigin, MCPURL string
	Config                     *config.Config
	// YAML is the configuration text (for token service processes).
	YAML    string
	Server  *server.Server // in-process token service; nil when remote
	Gateway *gateway.Gateway
	// GatewayProc is the gateway when it runs as a separate process (nil otherwise, and
	// Gateway is nil then).
	GatewayProc *gatewayProcess
	// SQLitePath is the database file when the storage is the default SQLite.
	SQLitePath string
	// Upstream counts the requests the MCP server received; Checks the check calls the
	// filter made to the in-process token service.
	Upstream *atomic.Int64
	Checks   atomic.Int64
	// CheckMarker, when set, makes MarkedChecks count the check calls whose body contains it.
	CheckMarker  atomic.Pointer[string]
	MarkedChecks atomic.Int64
	// With stackOptions.Upstream: the upstream OAuth server (a second OpenID provider), the
	// upstream_oauth2 route's URL, the last Authorization the MCP server received on that
	// route (the Internal Token), and a hook called with the form of each request to the
	// upstream token endpoint once its answer is back, before the token service gets it.
	Up          *harness.IDP
	UpURL       string
	UpBearer    atomic.Pointer[string]
	UpTokenHook atomic.Pointer[func(form url.Values)]
	authL       net.Listener
	mcpL        net.Listener
}

// stackOptions configure startStack.
type stackOptions struct {
	// Storage is the storage block, e.g. `{type: postgres, dsn: "…"}`; default SQLite.
	Storage string
	// CheckCacheTTL sets token_service.check_cache_ttl (default the config's 30s).
	CheckCacheTTL time.Duration
	// TokenServiceAddrs sets token_service.address and internal_address (remote replicas
	// read the same file; each replica's addresses are substituted, see replicaYAML).
	Remote func(t *testing.T, s *rstack) gateway.TokenService
	// GatewayProcess, when set, starts the token service replicas and returns the base URLs
	// of their public and internal listeners; the gateway then runs as a separate process
	// in front of them (gwprocess_test.go), so that its memory is measured apart from the
	// test's load. Remote is ignored.
	GatewayProcess func(t *testing.T, s *rstack) (public, internal []string)
	// Quiet sends the token service's and the gateway's logs nowhere (floods).
	Quiet bool
	// Upstream adds an upstream_oauth2 route (rstack.UpURL) whose upstream OAuth server is a
	// second OpenID provider rotating its refresh tokens, with the gateway as a public client
	// there; its access tokens (the Internal Tokens) live UpstreamTokenTTL (default 1h).
	Upstream         bool
	UpstreamTokenTTL time.Duration
}

// upstreamAccount is the user's account at the upstream OAuth server.
const upstreamAccount = "alice-upstream"

// upstreamRoute starts the upstream OAuth server and a proxy in front of its token endpoint
// (rstack.UpTokenHook) and returns the route's configuration.
func (s *rstack) upstreamRoute(t *testing.T, opts stackOptions, upstream string) string {
	t.Helper()
	ttl := opts.UpstreamTokenTTL
	if ttl == 0 {
		ttl = time.Hour
	}
	s.Up = harness.StartIDP(t, harness.IDPOptions{
		Clients: []harness.IDPClient{{ClientID: "gateway-upstream", RedirectURIs: []string{"http://127.0.0.1" + paths.UpstreamCallback},
			TokenEndpointAuthMethod: "none"}},
		Users:          []harness.IDPUser{{Sub: upstreamAccount, Email: "alice@upstream.example", EmailVerified: true}},
		AccessTokenTTL: ttl, IDTokenTTL: time.Hour, RefreshTokenTTL: 48 * time.Hour,
	})
	target, _ := url.Parse(s.Up.Issuer)
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ModifyResponse = func(resp *http.Response) error {
		if hook := s.UpTokenHook.Load(); hook != nil {
			(*hook)(resp.Request.PostForm)
		}
		return nil
	}
	tokenProxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<16))
		form, _ := url.ParseQuery(string(body))
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.PostForm = form
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(tokenProxy.Close)
	s.UpURL = s.MCPOrigin + "/up"
	return fmt.Sprintf(`
  - name: Upstream
    from: %s
    to: %s/up
    policy: {allow: {and: [{authenticated_user: true}]}}
    mcp:
      server:
        upstream_oauth2:
          client_id: gateway-upstream
          scopes: [openid, offline_access]
          endpoint: {auth_url: "%s/auth", token_url: "%s/token"}`, s.UpURL, upstream, s.Up.Issuer, tokenProxy.URL)
}

// stubMCP answers every JSON-RPC request with an empty result, as a cheap MCP server.
func stubMCP(count *atomic.Int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		count.Add(1)
		var req struct {
			ID json.RawMessage `json:"id"`
		}
		_ = json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&req)
		if len(req.ID) == 0 {
			req.ID = json.RawMessage("null")
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"ok"}]}}`, req.ID)
	})
}

func newSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)
}

// startStack starts an OpenID provider, a stub MCP server, the token service and the gateway.
func startStack(t *testing.T, opts stackOptions) *rstack {
	t.Helper()
	s := &rstack{Upstream: &atomic.Int64{}}
	s.IDP = harness.StartIDP(t, harness.IDPOptions{IDTokenTTL: 24 * time.Hour, AccessTokenTTL: 24 * time.Hour})
	stub := stubMCP(s.Upstream)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/up") {
			b := r.Header.Get("Authorization")
			s.UpBearer.Store(&b)
		}
		stub.ServeHTTP(w, r)
	}))
	t.Cleanup(up.Close)
	s.authL, s.mcpL = listen(t), listen(t)
	s.AuthURL = "http://" + s.authL.Addr().String()
	s.MCPOrigin = "http://" + s.mcpL.Addr().String()
	s.MCPURL = s.MCPOrigin + "/mcp"
	storage := opts.Storage
	if storage == "" {
		s.SQLitePath = t.TempDir() + "/gateway.db"
		storage = fmt.Sprintf("{type: sqlite, path: %q}", s.SQLitePath)
	}
	ttl := ""
	if opts.CheckCacheTTL > 0 {
		ttl = "\n  check_cache_ttl: " + opts.CheckCacheTTL.String()
	}
	s.YAML = fmt.Sprintf(`
runtime_flags: {mcp: true}
authenticate_service_url: %s
shared_secret: %s
cookie_secret: %s
cookie_expiration: 1h
idp_provider: oidc
idp_provider_url: %s
idp_client_id: %s
idp_client_secret: %s
storage: %s
token_service:
  address: TS_ADDRESS
  internal_address: TS_INTERNAL_ADDRESS
  trusted_proxy_hops: 1%s
routes:
  - name: Stub
    from: %s
    to: %s/mcp
    policy: {allow: {and: [{authenticated_user: true}]}}
    mcp: {server: {}}
`, s.AuthURL, newSecret(), newSecret(), s.IDP.Issuer, s.IDP.ClientID, s.IDP.ClientSecret, storage, ttl, s.MCPURL, up.URL)
	if opts.Upstream {
		s.YAML += s.upstreamRoute(t, opts, up.URL) + "\n"
	}
	cfg, err := config.Parse([]byte(replicaYAML(s.YAML, "127.0.0.1:1", "127.0.0.1:2")), nil)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	s.Config = cfg

	if opts.GatewayProcess != nil {
		public, internal := opts.GatewayProcess(t, s)
		s.GatewayProc = startGatewayProcess(t, s, public, internal)
		return s
	}

	var logger *slog.Logger
	if opts.Quiet {
		logger = slog.New(slog.DiscardHandler)
	} else {
		logger = slog.New(slog.NewTextHandler(newTestWriter(t), &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	ctx, cancel := context.WithCancel(context.Background())
	var ts gateway.TokenService
	if opts.Remote != nil {
		ts = opts.Remote(t, s)
	} else {
		// In-process, the token service sees the clients' own addresses: no proxy hop.
		inproc, perr := config.Parse([]byte(strings.Replace(replicaYAML(s.YAML, "127.0.0.1:1", "127.0.0.1:2"), "trusted_proxy_hops: 1", "trusted_proxy_hops: 0", 1)), nil)
		if perr != nil {
			cancel()
			t.Fatalf("config: %v", perr)
		}
		s.Server, err = server.New(ctx, inproc, server.WithLogger(logger))
		if err != nil {
			cancel()
			t.Fatalf("token service: %v", err)
		}
		internal := s.Server.InternalHandler()
		ts = gateway.TokenService{Public: s.Server.PublicHandler(), Internal: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.Checks.Add(1)
			if marker := s.CheckMarker.Load(); marker != nil {
				body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<16))
				if bytes.Contains(body, []byte(*marker)) {
					s.MarkedChecks.Add(1)
				}
				r.Body = io.NopCloser(bytes.NewReader(body))
			}
			internal.ServeHTTP(w, r)
		})}
	}
	s.Gateway, err = gateway.New(ctx, gateway.Options{Config: cfg, Module: wasmbuild.Module(t), TokenService: ts, Logger: logger})
	if err != nil {
		cancel()
		t.Fatalf("gateway: %v", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.Gateway.Serve(ctx, []net.Listener{s.authL, s.mcpL})
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		s.Gateway.Close()
		if s.Server != nil {
			s.Server.Close()
		}
	})
	return s
}

// replicaYAML fills in a replica's listener addresses.
func replicaYAML(y, public, internal string) string {
	return strings.NewReplacer("TS_INTERNAL_ADDRESS", internal, "TS_ADDRESS", public).Replace(y)
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// testWriter keeps the newest log lines (faults make many) and prints them if the test fails.
type testWriter struct {
	mu  sync.Mutex
	buf []byte
}

const logKeep = 32 << 10

func newTestWriter(t *testing.T) *testWriter {
	w := &testWriter{}
	t.Cleanup(func() {
		if t.Failed() {
			w.mu.Lock()
			t.Logf("newest log lines:\n%s", w.buf)
			w.mu.Unlock()
		}
	})
	return w
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	if over := len(w.buf) - logKeep; over > 0 {
		w.buf = append(w.buf[:0], w.buf[over:]...)
	}
	return len(p), nil
}

// client is an MCP client signed in through the real flow: dynamic registration, the
// authorization-code flow with PKCE at the gateway and the OpenID provider, the token request.
type client struct {
	Config *oauth2.Config
	Token  *oauth2.Token
}

const redirectURI = "http://127.0.0.1:9/callback"

// httpClient is the suite's HTTP client: bounded, no proxy from the environment.
var httpClient = &http.Client{
	Timeout:   20 * time.Second,
	Transport: &http.Transport{MaxIdleConnsPerHost: 256, IdleConnTimeout: 30 * time.Second},
}

func (s *rstack) signIn(t *testing.T) *client {
	t.Helper()
	return s.signInTo(t, s.MCPURL)
}

// signInTo signs a new client in for the MCP server at resource (a route's from URL); on an
// upstream_oauth2 route the authorization flow runs the upstream connect too.
func (s *rstack) signInTo(t *testing.T, resource string) *client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	reg, _ := json.Marshal(map[string]any{
		"client_name": "reliability", "redirect_uris": []string{redirectURI},
		"grant_types": []string{"authorization_code", "refresh_token"}, "response_types": []string{"code"},
		"token_endpoint_auth_method": "none",
	})
	resp, err := httpClient.Post(s.MCPOrigin+"/.gateway/mcp/register", "application/json", bytes.NewReader(reg))
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		ClientID string `json:"client_id"`
	}
	err = json.NewDecoder(resp.Body).Decode(&out)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || err != nil {
		t.Fatalf("registration: %d %v", resp.StatusCode, err)
	}
	cfg := &oauth2.Config{
		ClientID: out.ClientID, RedirectURL: redirectURI, Scopes: []string{"offline_access"},
		Endpoint: oauth2.Endpoint{AuthURL: s.MCPOrigin + "/.gateway/mcp/authorize", TokenURL: s.MCPOrigin + "/.gateway/mcp/token", AuthStyle: oauth2.AuthStyleInParams},
	}
	verifier := oauth2.GenerateVerifier()
	res := oauth2.SetAuthURLParam("resource", resource)
	cb, err := harness.NewBrowser().Authorize(ctx, cfg.AuthCodeURL("st", oauth2.S256ChallengeOption(verifier), res), redirectURI)
	if err != nil {
		t.Fatalf("authorize: %v", err)
	}
	tok, err := cfg.Exchange(context.WithValue(ctx, oauth2.HTTPClient, httpClient), cb.Query().Get("code"), oauth2.VerifierOption(verifier), res)
	if err != nil {
		t.Fatalf("token: %v", err)
	}
	return &client{Config: cfg, Token: tok}
}

// refreshStatus sends a refresh_token grant for rt and returns the status, the OAuth error
// code and, on success, the new tokens.
func (c *client) refreshStatus(rt string) (int, string, *tokenResponse) {
	form := "grant_type=refresh_token&client_id=" + c.Config.ClientID + "&refresh_token=" + rt
	resp, err := httpClient.Post(c.Config.Endpoint.TokenURL, "application/x-www-form-urlencoded", strings.NewReader(form))
	if err != nil {
		return 0, err.Error(), nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(b, &e)
		if resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") == "" {
			e.Error += " (no Retry-After)"
		}
		return resp.StatusCode, e.Error, nil
	}
	var tr tokenResponse
	if err := json.Unmarshal(b, &tr); err != nil || tr.AccessToken == "" {
		return resp.StatusCode, "malformed token response", nil // what a garbage-answering service gives
	}
	return resp.StatusCode, "", &tr
}

type tokenResponse struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	ExpiresIn    int64  `json:"expires_in"`
}

// toolCall is the JSON-RPC request the suite's users send.
const toolCall = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`

// mcp sends one tool call with token and returns the status (0: transport error).
func mcp(url, token string) int {
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(toolCall))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	return resp.StatusCode
}
