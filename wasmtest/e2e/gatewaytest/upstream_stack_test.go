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
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/tokensvc/secret"
	"github.com/mcpmesh/gateway/tokensvc/server"
	"github.com/mcpmesh/gateway/tokensvc/upstream"
	"github.com/mcpmesh/gateway/wasmtest/e2e/harness"
	"github.com/mcpmesh/gateway/wasmtest/gateway"
	"github.com/mcpmesh/gateway/wasmtest/wasmbuild"
)

// upstreamAccount is the user's account at the upstream OAuth server.
const upstreamAccount = "alice-upstream"

// upStack is a gateway whose MCP server route has upstream_oauth2, with a second
// oidc-provider as the upstream OAuth server, an MCP server (Go SDK) that checks every bearer
// it receives at that provider's userinfo endpoint, and an mcp.client route.
type upStack struct {
	IDP, Up *harness.IDP
	// UpClient is the gateway's client at the upstream provider.
	UpClient                   harness.IDPClient
	AuthURL, MCPOrigin, AppURL string
	RouteURL                   string // the upstream_oauth2 route
	Config                     *config.Config
	Server                     *server.Server
	AppRequests                chan *http.Request
	clockOffset                atomic.Int64
	logs                       *upBuffer
	responses                  upBuffer // every response the test's clients received
	mu                         sync.Mutex
	bearers                    []string // Authorization values the MCP server received
	refreshTokens              map[string]bool
}

func (s *upStack) advance(d time.Duration) { s.clockOffset.Add(int64(d)) }

type upBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *upBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
func (l *upBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// startUpstreamStack starts the stack with the route's auth_style (the upstream client's
// token_endpoint_auth_method matches it; oidc-provider refuses any other method).
func startUpstreamStack(t *testing.T, authStyle string) *upStack {
	t.Helper()
	return startUpstreamStackWith(t, authStyle, map[string]string{"header": "client_secret_basic", "params": "client_secret_post"}[authStyle])
}

// startUpstreamStackWith registers the gateway at the upstream provider with the client
// authentication method (client_secret_basic or client_secret_post).
func startUpstreamStackWith(t *testing.T, authStyle, method string) *upStack {
	t.Helper()
	return startUpstreamStackAt(t, authStyle, method, "")
}

// startUpstreamStackAt points the route's auth_url and token_url at provider (its /auth and
// /token) instead of the upstream oidc-provider, when provider is not empty.
func startUpstreamStackAt(t *testing.T, authStyle, method, provider string) *upStack {
	t.Helper()
	s := &upStack{AppRequests: make(chan *http.Request, 64), logs: &upBuffer{}, refreshTokens: map[string]bool{}}
	s.IDP = harness.StartIDP(t, harness.IDPOptions{IDTokenTTL: 24 * time.Hour, AccessTokenTTL: 24 * time.Hour})
	s.UpClient = harness.IDPClient{
		ClientID: "gateway-upstream", ClientSecret: "upstream-secret-" + rand.Text(),
		RedirectURIs:            []string{"http://127.0.0.1" + paths.UpstreamCallback},
		TokenEndpointAuthMethod: method,
	}
	s.Up = harness.StartIDP(t, harness.IDPOptions{
		Clients: []harness.IDPClient{s.UpClient},
		Users:   []harness.IDPUser{{Sub: upstreamAccount, Email: "alice@upstream.example", EmailVerified: true, Name: "Alice Upstream"}},
		// Hours of upstream token lifetime: the token service's clock is moved instead.
		AccessTokenTTL: time.Hour, IDTokenTTL: time.Hour, RefreshTokenTTL: 48 * time.Hour,
		StrictClientAuth: true,
	})
	mcpSrv := httptest.NewServer(s.mcpServer(t))
	t.Cleanup(mcpSrv.Close)
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case s.AppRequests <- r.Clone(context.Background()):
		default:
		}
		io.WriteString(w, "app backend")
	}))
	t.Cleanup(app.Close)

	authL, mcpL, appL := listen(t, "127.0.0.1"), listen(t, "127.0.0.1"), listen(t, "127.0.0.3")
	s.AuthURL = "http://" + authL.Addr().String()
	s.MCPOrigin = "http://" + mcpL.Addr().String()
	s.RouteURL = s.MCPOrigin + "/up"
	if provider == "" {
		provider = s.Up.Issuer
	}
	s.AppURL = "http://" + appL.Addr().String()
	yaml := fmt.Sprintf(`
runtime_flags: {mcp: true}
authenticate_service_url: %s
shared_secret: %s
cookie_secret: %s
cookie_expiration: 24h
idp_provider: oidc
idp_provider_url: %s
idp_client_id: %s
idp_client_secret: %s
storage: {type: sqlite, path: %s}
token_service: {check_cache_ttl: 1s, access_token_lifetime: 24h}
routes:
  - name: Upstream whoami
    from: %s
    to: %s/mcp
    policy: {allow: {and: [{authenticated_user: true}]}}
    mcp:
      server:
        upstream_oauth2:
          client_id: %s
          client_secret: %s
          scopes: [openid, offline_access]
          endpoint: {auth_url: "%s/auth", token_url: "%s/token", auth_style: %s}
  - name: App
    from: %s
    to: %s
    policy: {allow: {and: [{authenticated_user: true}]}}
    mcp: {client: {}}
`, s.AuthURL, randomKey(), randomKey(), s.IDP.Issuer, s.IDP.ClientID, s.IDP.ClientSecret, filepath.Join(t.TempDir(), "gateway.db"),
		s.RouteURL, mcpSrv.URL, s.UpClient.ClientID, s.UpClient.ClientSecret, provider, provider, authStyle,
		s.AppURL, app.URL)
	cfg, err := config.Parse([]byte(yaml), nil)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	s.Config = cfg
	ctx, cancel := context.WithCancel(context.Background())
	// Every log line of the session, debug included, is kept for the leak search.
	logger := slog.New(slog.NewTextHandler(io.MultiWriter(s.logs, &testWriter{t: t}), &slog.HandlerOptions{Level: slog.LevelDebug}))
	ts, err := server.New(ctx, cfg, server.WithLogger(logger),
		server.WithClock(func() time.Time { return time.Now().Add(time.Duration(s.clockOffset.Load())) }))
	if err != nil {
		cancel()
		t.Fatalf("token service: %v", err)
	}
	s.Server = ts
	gw, err := gateway.New(ctx, gateway.Options{
		Config: cfg, Module: wasmbuild.Module(t), Logger: logger,
		TokenService: gateway.TokenService{Public: ts.PublicHandler(), Internal: ts.InternalHandler()},
	})
	if err != nil {
		cancel()
		t.Fatalf("gateway: %v", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = gw.Serve(ctx, []net.Listener{authL, mcpL, appL})
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		gw.Close()
		ts.Close()
	})
	return s
}

// mcpServer is the MCP server behind the route (Go SDK). Its tool whoami_upstream asks the
// upstream provider's userinfo endpoint who the bearer it received belongs to. Every
// Authorization header it receives is recorded.
func (s *upStack) mcpServer(t *testing.T) http.Handler {
	srv := mcp.NewServer(&mcp.Implementation{Name: "upstream-whoami", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "whoami_upstream", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			text := "no bearer"
			if extra := req.GetExtra(); extra != nil {
				text = s.upstreamWhoami(ctx, extra.Header.Get("Authorization"))
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.bearers = append(s.bearers, r.Header.Get("Authorization"))
		s.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

// upstreamWhoami returns the upstream account of an Authorization header value, or
// "rejected: <status>".
func (s *upStack) upstreamWhoami(ctx context.Context, authz string) string {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.Up.Issuer+"/me", nil)
	req.Header.Set("Authorization", authz)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "rejected: " + err.Error()
	}
	defer resp.Body.Close()
	var out struct {
		Sub string `json:"sub"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&out) != nil {
		return fmt.Sprintf("rejected: %d", resp.StatusCode)
	}
	return out.Sub
}

// recorded returns the Authorization values the MCP server received.
func (s *upStack) recorded() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.bearers...)
}

// storedTI opens alice's stored TI (nil when there is none) and remembers its refresh token
// for the leak search.
func (s *upStack) storedTI(t *testing.T, subject string) *upstream.Token {
	t.Helper()
	rec, err := s.Server.Store().GetUpstreamToken(context.Background(), subject, s.Config.Routes[0].Normalized().ID, time.Now().Add(time.Duration(s.clockOffset.Load())))
	if err != nil {
		return nil
	}
	sealer, _ := secret.NewSealer(s.Config.DeriveKey("seal"))
	raw, err := sealer.Open(rec.Sealed, upstream.SealPurpose(subject, rec.RouteID))
	if err != nil {
		t.Fatalf("open stored TI: %v", err)
	}
	var tok upstream.Token
	if err := json.Unmarshal(raw, &tok); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	s.refreshTokens[tok.RefreshToken] = true
	s.mu.Unlock()
	return &tok
}

// secrets returns every upstream secret seen in this session: the client secret, every TI
// the MCP server received and every upstream refresh token stored.
func (s *upStack) secrets() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []string{s.UpClient.ClientSecret}
	for _, b := range s.bearers {
		if v, ok := strings.CutPrefix(b, "Bearer "); ok && v != "" {
			out = append(out, v)
		}
	}
	for rt := range s.refreshTokens {
		if rt != "" {
			out = append(out, rt)
		}
	}
	return out
}

// recording is an http.RoundTripper that keeps every response's headers, and its body as
// the client reads it (event streams included, without waiting for their end), for the leak
// search.
type recording struct {
	s    *upStack
	next http.RoundTripper
}

func (r recording) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	fmt.Fprintf(&r.s.responses, "%s %s -> %d %v\n", req.Method, req.URL, resp.StatusCode, resp.Header)
	resp.Body = teeBody{Reader: io.TeeReader(resp.Body, &r.s.responses), Closer: resp.Body}
	return resp, nil
}

type teeBody struct {
	io.Reader
	io.Closer
}

// browser returns a new browser whose responses are recorded for the leak search.
func (s *upStack) browser() *harness.Browser {
	b := harness.NewBrowser()
	b.Client.Transport = recording{s: s, next: http.DefaultTransport}
	return b
}

// client returns an HTTP client whose responses are recorded.
func (s *upStack) client(next http.RoundTripper) *http.Client {
	return &http.Client{Transport: recording{s: s, next: next}}
}

// randomKey is a fresh base64 32-byte secret for a test configuration's shared_secret or
// cookie_secret.
func randomKey() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)
}
