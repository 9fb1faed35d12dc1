package gatewaytest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/tokensvc/secret"
	"github.com/mcpmesh/gateway/tokensvc/server"
	"github.com/mcpmesh/gateway/tokensvc/upstream"
	"github.com/mcpmesh/gateway/wasmtest/e2e/harness"
	"github.com/mcpmesh/gateway/wasmtest/gateway"
	"github.com/mcpmesh/gateway/wasmtest/wasmbuild"
)

// discStack is a gateway whose MCP server route has upstream_discovery, in front of an MCP
// server built with the TypeScript SDK's bearer-auth middleware and protected by its own
// oidc-provider, which the gateway is never configured with (harness.StartAuthedUpstream).
type discStack struct {
	IDP         *harness.IDP
	Up          *harness.AuthedUpstream
	RouteURL    string
	Config      *config.Config
	Server      *server.Server
	logs        *upBuffer
	clockOffset atomic.Int64
}

func (s *discStack) advance(d time.Duration) { s.clockOffset.Add(int64(d)) }

// startDiscoveryStack starts the stack with the upstream's authorization server in mode
// (harness.UpstreamDCR or harness.UpstreamCIMD). The gateway runs with
// server.WithInsecureLoopbackDiscovery: everything is on loopback http.
func startDiscoveryStack(t *testing.T, mode string) *discStack {
	t.Helper()
	s := &discStack{logs: &upBuffer{}}
	s.IDP = harness.StartIDP(t, harness.IDPOptions{IDTokenTTL: 24 * time.Hour, AccessTokenTTL: 24 * time.Hour})
	s.Up = harness.StartAuthedUpstream(t, harness.AuthedUpstreamOptions{Mode: mode, LoopbackHTTPClientIDs: mode == harness.UpstreamCIMD})
	authL, mcpL := listen(t, "127.0.0.1"), listen(t, "127.0.0.1")
	authURL := "http://" + authL.Addr().String()
	s.RouteURL = "http://" + mcpL.Addr().String() + "/vendor"
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
mcp_allowed_upstream_domains: ["127.0.0.1"]
routes:
  - name: Vendor
    from: %s
    to: %s
    policy: {allow: {and: [{authenticated_user: true}]}}
    mcp: {server: {upstream_discovery: {}}}
`, authURL, randomKey(), randomKey(), s.IDP.Issuer, s.IDP.ClientID, s.IDP.ClientSecret, filepath.Join(t.TempDir(), "gateway.db"),
		s.RouteURL, s.Up.MCP)
	cfg, err := config.Parse([]byte(yaml), nil)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	s.Config = cfg
	ctx, cancel := context.WithCancel(context.Background())
	logger := slog.New(slog.NewTextHandler(io.MultiWriter(s.logs, &testWriter{t: t}), &slog.HandlerOptions{Level: slog.LevelDebug}))
	ts, err := server.New(ctx, cfg, server.WithLogger(logger), server.WithInsecureLoopbackDiscovery(),
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
		_ = gw.Serve(ctx, []net.Listener{authL, mcpL})
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		gw.Close()
		ts.Close()
	})
	return s
}

// storedTI opens the user's stored TI (nil when there is none).
func (s *discStack) storedTI(t *testing.T, subject string) *upstream.Token {
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
	return &tok
}

// caller reads the upstream's whoami answer.
func caller(t *testing.T, call *harness.ToolCallResult) harness.UpstreamCaller {
	t.Helper()
	var c harness.UpstreamCaller
	if call == nil || call.IsError || len(call.Content) != 1 || json.Unmarshal([]byte(call.Content[0].Text), &c) != nil {
		t.Fatalf("whoami = %+v, want the upstream's JSON answer", call)
	}
	return c
}

// sawUpstreamSignIn reports whether a browser history went through the upstream's
// authorization server.
func (s *discStack) sawUpstreamSignIn(history []string) bool {
	for _, h := range history {
		if strings.Contains(h, s.Up.Issuer) {
			return true
		}
	}
	return false
}

// TestUpstreamDiscovery: a user signs in at the gateway with the official TypeScript SDK
// client; the gateway discovers the upstream's authorization server, registers (dynamic
// registration, or its client ID metadata document), connects the user's upstream account in
// the same browser flow, and the tool call reaches the upstream with a TI it accepts. The TI
// is refreshed like an upstream_oauth2 route's; after the upstream revokes the grant the next
// sign-in connects again.
func TestUpstreamDiscovery(t *testing.T) {
	for _, mode := range []string{harness.UpstreamDCR, harness.UpstreamCIMD} {
		t.Run(mode, func(t *testing.T) {
			s := startDiscoveryStack(t, mode)
			wantClient := s.RouteURL[:strings.LastIndex(s.RouteURL, "/")] + paths.UpstreamClientMetadata
			res, err := harness.RunTSClient(t, harness.ClientOptions{URL: s.RouteURL, Tool: "whoami"})
			if err != nil {
				t.Fatalf("%v\nresult %+v\nbrowser: %v\nlogs:\n%s", err, res, res.Browser, s.logs.String())
			}
			if !s.sawUpstreamSignIn(res.Browser) {
				t.Fatalf("the authorization flow did not run the upstream connect; browser: %v", res.Browser)
			}
			for _, call := range []*harness.ToolCallResult{res.Call, res.CallAfterRefresh} {
				c := caller(t, call)
				if c.Sub != "alice" || c.Resource != s.Up.MCP {
					t.Fatalf("the upstream saw %+v, want alice's token for %s", c, s.Up.MCP)
				}
				switch mode {
				case harness.UpstreamCIMD:
					if c.ClientID != wantClient {
						t.Errorf("client_id %q, want the gateway's document %q", c.ClientID, wantClient)
					}
				default:
					if c.ClientID == "" || strings.Contains(c.ClientID, "://") {
						t.Errorf("client_id %q, want a dynamically registered one", c.ClientID)
					}
				}
			}
			ti := s.storedTI(t, "alice")
			if ti == nil || ti.RefreshToken == "" {
				t.Fatalf("stored TI %+v, want one with a refresh token", ti)
			}

			// The TI comes due: the gateway refreshes it (with the resource) and the upstream
			// accepts the new one.
			s.advance(time.Hour - 30*time.Second)
			waitCache()
			res, err = harness.RunGoClient(t, harness.ClientOptions{URL: s.RouteURL, Tool: "whoami", NoRefresh: true})
			if err != nil {
				t.Fatalf("after the TI came due: %v\nbrowser: %v", err, res.Browser)
			}
			if c := caller(t, res.Call); c.Sub != "alice" {
				t.Fatalf("after refresh the upstream saw %+v", c)
			}
			if s.sawUpstreamSignIn(res.Browser) {
				t.Errorf("a connected user went through the upstream sign-in again: %v", res.Browser)
			}
			if next := s.storedTI(t, "alice"); next == nil || next.AccessToken == ti.AccessToken || next.RefreshToken == ti.RefreshToken {
				t.Fatalf("the TI was not refreshed and rotated")
			}

			// The upstream revokes the grant: once the TI is due its refresh is refused, and the
			// next sign-in connects again.
			s.Up.Revoke(t, "alice")
			s.advance(time.Hour)
			waitCache()
			res, err = harness.RunGoClient(t, harness.ClientOptions{URL: s.RouteURL, Tool: "whoami", NoRefresh: true})
			if err != nil {
				t.Fatalf("signing in after the revocation: %v\nbrowser: %v", err, res.Browser)
			}
			if c := caller(t, res.Call); c.Sub != "alice" {
				t.Fatalf("after reconnecting the upstream saw %+v", c)
			}
			if !s.sawUpstreamSignIn(res.Browser) {
				t.Fatalf("the sign-in after the revocation did not connect again: %v", res.Browser)
			}

			// The upstream never received the gateway's External Token: every request it
			// saw either carried a valid token of its own authorization server (sub set) or
			// none at all (the discovery probe, answered 401).
			for _, r := range s.Up.Requests(t) {
				if r.Sub == "" && !(r.Status == 401 && strings.Contains(r.WWWAuthenticate, "resource_metadata")) {
					t.Errorf("the upstream got %+v", r)
				}
				if r.Sub != "" && r.Sub != "alice" {
					t.Errorf("the upstream saw subject %q", r.Sub)
				}
			}
		})
	}
}

// TestUpstreamDiscovery_StepUp: the upstream answers a tool call 403 insufficient_scope (its
// whoami_admin needs scope admin). The gateway hands the official Go SDK client its own
// step-up challenge; the client authorizes again asking for admin, the gateway connects the
// upstream again asking for it too, and the retried call reaches the upstream with a TI that
// carries admin.
func TestUpstreamDiscovery_StepUp(t *testing.T) {
	s := startDiscoveryStack(t, harness.UpstreamDCR)
	res, err := harness.RunGoClient(t, harness.ClientOptions{URL: s.RouteURL, Tool: "whoami", DeniedTool: "whoami_admin", NoRefresh: true})
	if err != nil {
		t.Fatalf("%v\nbrowser: %v\nlogs:\n%s", err, res.Browser, s.logs.String())
	}
	if c := caller(t, res.Call); c.Sub != "alice" || strings.Contains(strings.Join(c.Scopes, " "), "admin") {
		t.Fatalf("whoami: the upstream saw %+v, want alice without admin", c)
	}
	if res.DeniedCall == nil {
		t.Fatalf("whoami_admin: %s, want the call to succeed after the step-up\nbrowser: %v", res.DeniedCallError, res.Browser)
	}
	admin := caller(t, res.DeniedCall)
	if admin.Sub != "alice" || !strings.Contains(" "+strings.Join(admin.Scopes, " ")+" ", " admin ") {
		t.Fatalf("whoami_admin: the upstream saw %+v, want alice's TI with admin", admin)
	}
	var forbidden, ok int
	for _, r := range s.Up.Requests(t) {
		if r.Tool != "whoami_admin" {
			continue
		}
		switch r.Status {
		case 403:
			forbidden++
		case 200:
			ok++
		}
	}
	if forbidden != 1 || ok != 1 {
		t.Errorf("whoami_admin reached the upstream %d times refused and %d times allowed, want once each", forbidden, ok)
	}
}
