package gatewaytest

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/tokensvc/server"
	"github.com/mcpmesh/gateway/wasmtest/devca"
	"github.com/mcpmesh/gateway/wasmtest/e2e/harness"
	"github.com/mcpmesh/gateway/wasmtest/gateway"
	"github.com/mcpmesh/gateway/wasmtest/wasmbuild"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// matrixStack is the gateway the interoperability matrix signs in to, as a new user meets it:
// https MCP routes with a certificate from the development CA (clients trust CAFile), one
// route whose from is a bare origin and one with a path, both in front of one Go SDK MCP
// server that counts what it runs.
type matrixStack struct {
	IDP *harness.IDP
	// AuthURL is the authenticate host (plain http on 127.0.0.1, which clients exempt).
	AuthURL string
	// BareMCP is the MCP URL on the route whose from is the bare origin BareOrigin; PathMCP the
	// MCP URL that is the from of the path route.
	BareOrigin, BareMCP, PathMCP string
	// CAFile is the development CA; HTTPClient trusts it.
	CAFile     string
	HTTPClient *http.Client
	Upstream   *matrixUpstream
}

// matrixUpstream is the MCP server behind both routes: the tools echo, whoami and
// delete_everything (which the policy denies), and what it saw.
type matrixUpstream struct {
	URL string
	mu  sync.Mutex
	// runs counts the tool runs by tool name; versions the MCP-Protocol-Version headers
	// received; methods the Mcp-Method headers received.
	runs     map[string]int
	versions map[string]int
	methods  map[string]int
}

func (u *matrixUpstream) count(m map[string]int, k string) {
	u.mu.Lock()
	m[k]++
	u.mu.Unlock()
}

// Runs returns how often tool ran.
func (u *matrixUpstream) Runs(tool string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.runs[tool]
}

// Versions returns the MCP-Protocol-Version headers received, with counts.
func (u *matrixUpstream) Versions() map[string]int {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := map[string]int{}
	for k, v := range u.versions {
		out[k] = v
	}
	return out
}

func startMatrixUpstream(t *testing.T) *matrixUpstream {
	t.Helper()
	u := &matrixUpstream{runs: map[string]int{}, versions: map[string]int{}, methods: map[string]int{}}
	type textArgs struct {
		Text string `json:"text,omitempty"`
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "matrix-upstream", Version: "1.0.0"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "Echo a text back"},
		func(_ context.Context, _ *mcp.CallToolRequest, a textArgs) (*mcp.CallToolResult, any, error) {
			u.count(u.runs, "echo")
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + a.Text}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "whoami", Description: "Whether the gateway's assertion arrived"},
		func(_ context.Context, req *mcp.CallToolRequest, _ textArgs) (*mcp.CallToolResult, any, error) {
			u.count(u.runs, "whoami")
			has := req.Extra != nil && req.Extra.Header.Get("X-Gateway-Assertion") != ""
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("assertion: %v", has)}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "delete_everything", Description: "A tool the policy denies"},
		func(_ context.Context, _ *mcp.CallToolRequest, _ textArgs) (*mcp.CallToolResult, any, error) {
			u.count(u.runs, "delete_everything")
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "everything deleted"}}}, nil, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if v := r.Header.Get("Mcp-Protocol-Version"); v != "" {
			u.count(u.versions, v)
		}
		if m := r.Header.Get("Mcp-Method"); m != "" {
			u.count(u.methods, m)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	u.URL = hs.URL
	return u
}

func startMatrixStack(t *testing.T) *matrixStack {
	t.Helper()
	s := &matrixStack{}
	s.IDP = harness.StartIDP(t, harness.IDPOptions{})
	s.Upstream = startMatrixUpstream(t)
	authL, bareL, pathL := listen(t, "127.0.0.1"), listen(t, "127.0.0.2"), listen(t, "127.0.0.3")
	s.AuthURL = "http://" + authL.Addr().String()
	s.BareOrigin = "https://" + bareL.Addr().String()
	s.BareMCP = s.BareOrigin + "/mcp"
	s.PathMCP = "https://" + pathL.Addr().String() + "/mcp"

	p, err := devca.Ensure(t.TempDir(), []string{"127.0.0.2", "127.0.0.3"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	s.CAFile = p.CA
	pemCA, err := os.ReadFile(p.CA)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pemCA)
	s.HTTPClient = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots}, ForceAttemptHTTP2: true,
	}}

	policy := `
    policy:
      allow: {and: [{authenticated_user: true}]}
      deny: {and: [{mcp_tool: {not_in: [echo, whoami]}}]}
    mcp: {server: {}}`
	yaml := fmt.Sprintf(`
runtime_flags: {mcp: true}
authenticate_service_url: %s
shared_secret: %s
cookie_secret: %s
idp_provider: oidc
idp_provider_url: %s
idp_client_id: %s
idp_client_secret: %s
authorize_log_fields: [request-id, user, allow, allow-why-false, mcp-method, mcp-tool, mcp-protocol-version, mcp-client-name, mcp-client-version]
storage: {type: sqlite, path: %s}
certificate_file: %s
certificate_key_file: %s
routes:
  - name: Matrix (bare origin)
    from: %s
    to: %s%s
  - name: Matrix (path)
    from: %s
    to: %s/mcp%s
`, s.AuthURL, randomSecret(), randomSecret(), s.IDP.Issuer, s.IDP.ClientID, s.IDP.ClientSecret,
		filepath.Join(t.TempDir(), "gateway.db"), p.Cert, p.Key,
		s.BareOrigin, s.Upstream.URL, policy, s.PathMCP, s.Upstream.URL, policy)
	cfg, err := config.Parse([]byte(yaml), nil)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	logger := slog.New(slog.NewTextHandler(&testWriter{t: t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
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
		_ = gw.Serve(ctx, []net.Listener{authL, bareL, pathL})
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		gw.Close()
		ts.Close()
	})
	return s
}

// randomSecret is a fresh base64 32-byte secret.
func randomSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)
}
