package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mcpmesh/gateway/filter/plugin/plugintest"
	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/tokensvc/secret"
	"github.com/mcpmesh/gateway/tokensvc/server"
	"github.com/mcpmesh/gateway/tokensvc/store"
	"github.com/mcpmesh/gateway/wasmtest/gateway"
	"github.com/mcpmesh/gateway/wasmtest/host"
)

// stackOptions configure the servers under test.
type stackOptions struct {
	module   *host.Module
	workers  int           // filter VMs
	logger   *slog.Logger  // the local gateway's logger (nil: discard)
	logLevel host.LogLevel // the proxy log level the filter runs under
	size     int           // bytes of the tools/call request body
}

// stack is what one benchmark run measures: one upstream MCP server, a bare
// httputil.ReverseProxy to it, and the local gateway (filter.wasm, in-process token service)
// to it, each on its own loopback listener.
type stack struct {
	up      *upstream
	bareURL string // the bare proxy's MCP URL
	gwURL   string // the gateway's MCP URL (the route's from)
	token   string // an External Token valid at the route
	body    []byte // the tools/call request
	gw      *gateway.Gateway
	closers []func()
	// checks counts the filter's calls to the token service's check API: with the token
	// cached, none while measuring.
	checks atomic.Int64
}

func (s *stack) countChecks(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.checks.Add(1)
		h.ServeHTTP(w, r)
	})
}

// upstream answers every tools/call with a fixed result, as a stateless MCP server would.
type upstream struct {
	requests atomic.Int64
	// sawAuthorization and sawNoAssertion count requests that carried an Authorization
	// header or lacked the identity assertion: through the gateway both must stay 0.
	sawAuthorization, sawNoAssertion atomic.Int64
	result                           []byte
}

func newUpstream() *upstream {
	text := strings.Repeat("y", 1024)
	return &upstream{result: fmt.Appendf(nil,
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":%q}],"isError":false}}`, text)}
}

func (u *upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	u.requests.Add(1)
	if r.Header.Get("Authorization") != "" {
		u.sawAuthorization.Add(1)
	}
	if r.Header.Get("X-Gateway-Assertion") == "" {
		u.sawNoAssertion.Add(1)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", fmt.Sprint(len(u.result)))
	_, _ = w.Write(u.result)
}

// listen opens a loopback listener on a free port.
func listen() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }

// serveOn serves h on l until close is called.
func (s *stack) serveOn(l net.Listener, h http.Handler) {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	s.closers = append(s.closers, func() { _ = srv.Close() })
}

// newStack starts the upstream, the bare proxy and the local gateway. The gateway runs the
// recommended policy of docs/policy.md (users of example.com, only the tool "echo") with the
// token service in-process on a memory store; the External Token is seeded into that store
// (the way wasmtest/gateway's tests do) and reaches the filter's cache through the real check
// API on each VM's first request (warm).
func newStack(ctx context.Context, o stackOptions) (_ *stack, err error) {
	s := &stack{up: newUpstream(), body: []byte(plugintest.ToolsCallBody(o.size))}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	upL, err := listen()
	if err != nil {
		return nil, err
	}
	s.serveOn(upL, s.up)
	upURL := "http://" + upL.Addr().String() + "/mcp"

	bareL, err := listen()
	if err != nil {
		return nil, err
	}
	target, _ := url.Parse("http://" + upL.Addr().String())
	s.serveOn(bareL, &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(target); pr.SetXForwarded() },
		// The transport the local gateway uses by default (gateway.New).
		Transport: &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: 90 * time.Second},
	})
	s.bareURL = "http://" + bareL.Addr().String() + "/mcp"

	authL, err := listen()
	if err != nil {
		return nil, err
	}
	mcpL, err := listen()
	if err != nil {
		return nil, err
	}
	s.gwURL = "http://" + mcpL.Addr().String() + "/mcp"
	cfg, err := config.Parse(fmt.Appendf(nil, `
runtime_flags: {mcp: true}
authenticate_service_url: http://%s
shared_secret: ZGVtby1vbmx5LXNoYXJlZC1zZWNyZXQtMzItYnl0ZXM=
cookie_secret: ZGVtby1vbmx5LWNvb2tpZS1zZWNyZXQtMzItYnl0ZXM=
idp_provider: oidc
idp_provider_url: http://127.0.0.1:1
idp_client_id: gw
idp_client_secret: s
storage: {type: memory}
routes:
  - from: %s
    to: %s
    policy:
      allow: {and: [{domain: {is: example.com}}]}
      deny: {and: [{mcp_tool: {not_in: [echo]}}]}
    mcp: {server: {}}
`, authL.Addr(), s.gwURL, upURL), nil)
	if err != nil {
		return nil, fmt.Errorf("configuration: %w", err)
	}
	logger := o.logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	ts, err := server.New(ctx, cfg, server.WithLogger(logger))
	if err != nil {
		return nil, fmt.Errorf("token service: %w", err)
	}
	s.closers = append(s.closers, func() { _ = ts.Close() })
	gw, err := gateway.New(ctx, gateway.Options{
		Config: cfg, Module: o.module, Workers: o.workers, Logger: logger,
		TokenService: gateway.TokenService{Public: ts.PublicHandler(), Internal: s.countChecks(ts.InternalHandler())},
		HostOptions:  func(ho *host.Options) { ho.LogLevel = o.logLevel },
	})
	if err != nil {
		return nil, err
	}
	s.gw = gw
	s.closers = append(s.closers, func() { _ = gw.Close() })
	gwCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = gw.Serve(gwCtx, []net.Listener{authL, mcpL}) }()
	s.closers = append(s.closers, func() { stop(); <-done })
	if s.token, err = seedToken(ctx, ts.Store()); err != nil {
		return nil, err
	}
	return s, nil
}

// seedToken stores a live session of alice@example.com and an External Token valid at every
// route, and returns the token.
func seedToken(ctx context.Context, st store.Store) (string, error) {
	now := time.Now()
	sess := store.Session{ID: secret.NewToken(), Subject: "alice", Email: "alice@example.com",
		Claims: []byte(`{"sub":"alice","email":"alice@example.com"}`), CreatedAt: now, ExpiresAt: now.Add(24 * time.Hour)}
	if err := st.CreateSession(ctx, sess); err != nil {
		return "", fmt.Errorf("seed session: %w", err)
	}
	tok := secret.NewToken()
	if err := st.CreateAccessToken(ctx, store.AccessToken{Hash: secret.Hash(tok), ClientID: "bench", SessionID: sess.ID,
		Subject: "alice", CreatedAt: now, ExpiresAt: now.Add(24 * time.Hour)}); err != nil {
		return "", fmt.Errorf("seed token: %w", err)
	}
	return tok, nil
}

// close stops every server, the last started first.
func (s *stack) close() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i]()
	}
	s.closers = nil
}
