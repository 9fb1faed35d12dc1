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
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/tokensvc/server"
	"github.com/mcpmesh/gateway/wasmtest/e2e/harness"
	"github.com/mcpmesh/gateway/wasmtest/gateway"
	"github.com/mcpmesh/gateway/wasmtest/wasmbuild"
)

// stack is a running gateway with its identity provider and upstreams.
type stack struct {
	IDP *harness.IDP
	// AuthURL is the authenticate host; MCPOrigin the MCP server route host.
	AuthURL, MCPOrigin string
	// OpenURL is the permissive MCP route, RestrictedURL the route with the recommended
	// policy (only test_simple_text among the tools), AppURL the mcp.client route.
	OpenURL, RestrictedURL, AppURL string
	// Everything is the everything-server's own URL (no gateway).
	Everything string
	// With stackOptions.TSServers: TS is the TypeScript SDK servers (ts-servers.mjs), and
	// TSURL, TS2URL and LegacyURL are gateway routes to them, each allowing any signed-in user
	// but denying every tool except echo: TSURL and TS2URL (two routes, one upstream) to the
	// stateful Streamable HTTP server, LegacyURL to the legacy HTTP+SSE server
	// (LegacyURL+"/sse", LegacyURL+"/messages?sessionId=…").
	TS                       *harness.TSServers
	TSURL, TS2URL, LegacyURL string
	// With stackOptions.SDKServers: SDKGoURL and SDKPythonURL are gateway routes (any
	// signed-in user) to the whoami MCP servers of startSDKUpstreams (sdk_test.go), reached
	// directly at SDKGoUpstream and SDKPythonUpstream.
	SDKGoURL, SDKPythonURL           string
	SDKGoUpstream, SDKPythonUpstream string
	Config                           *config.Config
	Server                           *server.Server
	Gateway                          *gateway.Gateway
	// AppRequests records the requests the mcp.client backend received.
	AppRequests chan *http.Request
	clockOffset atomic.Int64

	// With stackOptions.BareOrigin: BareURL is the origin of an MCP server route whose from has
	// no path, on a host of its own, to the everything-server's origin (any signed-in user):
	// its MCP URL is BareURL+"/mcp", deeper than the route's from.
	BareURL string

	// With stackOptions.Pinned: PinnedURL is a route, open to any signed-in user, whose tools
	// are pinned to a lock file made at start; PinnedEcho is the description its upstream
	// gives echo, which a test may change (pins_test.go).
	PinnedURL  string
	PinnedEcho *atomic.Value
}

// advance moves the token service's clock forward.
func (s *stack) advance(d time.Duration) { s.clockOffset.Add(int64(d)) }

func listen(t *testing.T, ip string) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatalf("listen on %s: %v", ip, err)
	}
	return l
}

// stackOptions adds optional parts to a stack.
type stackOptions struct {
	// TSServers adds the TypeScript SDK upstreams and their routes (see stack.TS).
	TSServers bool
	// SDKServers adds the MCP servers that verify the assertion with the SDKs (see
	// stack.SDKGoURL).
	SDKServers bool
	// BareOrigin adds the route of stack.BareURL.
	BareOrigin bool
	// ShadowRestricted gives the restricted route a policy_shadow that would deny every
	// tool (toollist_test.go).
	ShadowRestricted bool
	// Pinned adds the route of stack.PinnedURL (pins_test.go).
	Pinned bool
}

// startStack starts everything; it stops when the test ends.
func startStack(t *testing.T) *stack {
	t.Helper()
	return startStackWith(t, stackOptions{})
}

// startStackWith starts a stack with the optional parts opts asks for.
func startStackWith(t *testing.T, opts stackOptions) *stack {
	t.Helper()
	s := &stack{AppRequests: make(chan *http.Request, 16)}
	// Tokens outlive the clock jumps of the session-expiry test (the token service's clock runs
	// ahead of the provider's there).
	s.IDP = harness.StartIDP(t, harness.IDPOptions{IDTokenTTL: 24 * time.Hour, AccessTokenTTL: 24 * time.Hour})
	s.Everything = harness.StartEverythingServer(t)
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case s.AppRequests <- r.Clone(context.Background()):
		default:
		}
		io.WriteString(w, "app backend")
	}))
	t.Cleanup(app.Close)

	// The MCP route host is 127.0.0.1 (the conformance suite runs its DNS-rebinding scenario
	// only against localhost URLs); the authenticate host shares the address on another port,
	// with cookies of other names.
	authL, mcpL, appL := listen(t, "127.0.0.1"), listen(t, "127.0.0.1"), listen(t, "127.0.0.3")
	s.AuthURL = "http://" + authL.Addr().String()
	s.MCPOrigin = "http://" + mcpL.Addr().String()
	s.OpenURL = s.MCPOrigin + "/mcp"
	s.RestrictedURL = s.MCPOrigin + "/restricted"
	s.AppURL = "http://" + appL.Addr().String()

	secret := func() string {
		b := make([]byte, 32)
		rand.Read(b)
		return base64.StdEncoding.EncodeToString(b)
	}
	// Routes to the TypeScript SDK servers: the from and to paths are the same, so that the
	// legacy transport's endpoint event (/legacy/messages?sessionId=…) is right at the gateway.
	tsRoutes := ""
	if opts.TSServers {
		s.TS = harness.StartTSServers(t)
		s.TSURL, s.TS2URL, s.LegacyURL = s.MCPOrigin+"/ts", s.MCPOrigin+"/ts2", s.MCPOrigin+"/legacy"
		for _, r := range []struct{ name, from, to string }{
			{"TS streamable (echo only)", s.TSURL, s.TS.URL + "/ts"},
			{"TS streamable, second route (echo only)", s.TS2URL, s.TS.URL + "/ts"},
			{"TS legacy SSE (echo only)", s.LegacyURL, s.TS.URL + "/legacy"},
		} {
			tsRoutes += fmt.Sprintf(`
  - name: %s
    from: %s
    to: %s
    policy:
      allow: {and: [{authenticated_user: true}]}
      deny: {and: [{mcp_tool: {not_in: [echo]}}]}
    mcp: {server: {}}`, r.name, r.from, r.to)
		}
	}
	if opts.SDKServers {
		goURL, pyURL := startSDKUpstreams(t, s)
		s.SDKGoURL, s.SDKPythonURL = s.MCPOrigin+"/sdk-go", s.MCPOrigin+"/sdk-python"
		s.SDKGoUpstream, s.SDKPythonUpstream = goURL+"/sdk-go", pyURL+"/sdk-python"
		for _, r := range []struct{ name, from, to string }{
			{"whoami (Go SDK)", s.SDKGoURL, s.SDKGoUpstream},
			{"whoami (Python)", s.SDKPythonURL, s.SDKPythonUpstream},
		} {
			tsRoutes += fmt.Sprintf(`
  - name: %s
    from: %s
    to: %s
    policy: {allow: {and: [{authenticated_user: true}]}}
    mcp: {server: {}}`, r.name, r.from, r.to)
		}
	}
	tsRoutes += pinnedRoute(t, s, opts)
	var extraListeners []net.Listener
	if opts.BareOrigin {
		bareL := listen(t, "127.0.0.4")
		extraListeners = append(extraListeners, bareL)
		s.BareURL = "http://" + bareL.Addr().String()
		tsRoutes += fmt.Sprintf(`
  - name: Everything (bare origin)
    from: %s
    to: %s
    policy: {allow: {and: [{authenticated_user: true}]}}
    mcp: {server: {}}`, s.BareURL, strings.TrimSuffix(s.Everything, "/mcp"))
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
authorize_log_fields: [request-id, user, email, allow, allow-why-true, allow-why-false, deny, deny-why-false, mcp-method, mcp-tool, mcp-tool-parameters]
storage: {type: sqlite, path: %s}
routes:
  - name: Everything (open)
    from: %s
    to: %s
    policy: {allow: {and: [{authenticated_user: true}]}}
    mcp: {server: {}}
  - name: Everything (restricted)
    from: %s
    to: %s
    policy:
      allow: {and: [{domain: {is: example.com}}]}
      deny: {and: [{mcp_tool: {not_in: [test_simple_text]}}]}%s
    mcp: {server: {}}
  - name: App
    from: %s
    to: %s
    policy: {allow: {and: [{authenticated_user: true}]}}
    mcp: {client: {}}%s
`, s.AuthURL, secret(), secret(), s.IDP.Issuer, s.IDP.ClientID, s.IDP.ClientSecret,
		filepath.Join(t.TempDir(), "gateway.db"),
		s.OpenURL, s.Everything, s.RestrictedURL, s.Everything, restrictedShadow(opts), s.AppURL, app.URL, tsRoutes)
	cfg, err := config.Parse([]byte(yaml), nil)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	s.Config = cfg

	ctx, cancel := context.WithCancel(context.Background())
	logger := slog.New(slog.NewTextHandler(&testWriter{t: t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ts, err := server.New(ctx, cfg, server.WithLogger(logger),
		server.WithClock(func() time.Time { return time.Now().Add(time.Duration(s.clockOffset.Load())) }))
	if err != nil {
		cancel()
		t.Fatalf("token service: %v", err)
	}
	s.Server = ts
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
	s.Gateway = gw
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = gw.Serve(ctx, append([]net.Listener{authL, mcpL, appL}, extraListeners...))
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		gw.Close()
		ts.Close()
	})
	return s
}

// testWriter sends log lines to the test log.
type testWriter struct {
	t  *testing.T
	mu sync.Mutex
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
