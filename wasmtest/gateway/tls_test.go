package gateway_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/tokensvc/server"
	"github.com/mcpmesh/gateway/wasmtest/devca"
	"github.com/mcpmesh/gateway/wasmtest/gateway"
	"github.com/mcpmesh/gateway/wasmtest/wasmbuild"
)

// tlsStack is a gateway behind Live whose MCP route is https (a development certificate) and
// whose authenticate host is plain http.
type tlsStack struct {
	mcpURL, authURL string
	dir             string
	live            *gateway.Live
	cfgYAML         string
	roots           *x509.CertPool
}

func startTLSGateway(t *testing.T) *tlsStack {
	t.Helper()
	authL, _ := net.Listen("tcp", "127.0.0.1:0")
	mcpL, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &tlsStack{dir: t.TempDir(), authURL: "http://" + authL.Addr().String(), mcpURL: "https://" + mcpL.Addr().String() + "/mcp"}
	p, err := devca.Ensure(s.dir, []string{"127.0.0.2"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	s.roots = x509.NewCertPool()
	pemCA, _ := os.ReadFile(p.CA)
	s.roots.AppendCertsFromPEM(pemCA)
	s.cfgYAML = fmt.Sprintf(`
runtime_flags: {mcp: true}
authenticate_service_url: %s
shared_secret: ZGVtby1vbmx5LXNoYXJlZC1zZWNyZXQtMzItYnl0ZXM=
cookie_secret: ZGVtby1vbmx5LWNvb2tpZS1zZWNyZXQtMzItYnl0ZXM=
idp_provider: oidc
idp_provider_url: http://127.0.0.1:1
idp_client_id: gw
idp_client_secret: s
storage: {type: memory}
certificate_file: %s
certificate_key_file: %s
routes:
  - from: %s
    to: http://127.0.0.1:1/mcp
    policy: {allow: {and: [{authenticated_user: true}]}}
    mcp: {server: {}}
`, s.authURL, p.Cert, p.Key, s.mcpURL)
	ctx, cancel := context.WithCancel(context.Background())
	gw, ts := newGatewayFromYAML(ctx, t, s.cfgYAML)
	s.live = gateway.NewLive(gw, time.Second)
	done := make(chan struct{})
	go func() { defer close(done); _ = s.live.Serve(ctx, []net.Listener{authL, mcpL}) }()
	t.Cleanup(func() { cancel(); <-done; s.live.Wait(); s.live.Current().Close(); ts.Close() })
	return s
}

func newGatewayFromYAML(ctx context.Context, t *testing.T, y string) (*gateway.Gateway, *server.Server) {
	t.Helper()
	cfg, err := config.Parse([]byte(y), nil)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := server.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.New(ctx, gateway.Options{Config: cfg, Module: wasmbuild.Module(t),
		TokenService: gateway.TokenService{Public: ts.PublicHandler(), Internal: ts.InternalHandler()}})
	if err != nil {
		t.Fatal(err)
	}
	return gw, ts
}

func (s *tlsStack) client(maxVersion uint16) *http.Client {
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: s.roots, MaxVersion: maxVersion}, ForceAttemptHTTP2: true}
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

func TestGateway_TLS(t *testing.T) {
	s := startTLSGateway(t)

	t.Run("HTTPSRouteServesHTTP2WithTheConfiguredCertificate", func(t *testing.T) {
		resp, err := s.client(0).Get(s.mcpURL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 401 || resp.Proto != "HTTP/2.0" || resp.TLS == nil || resp.TLS.Version < tls.VersionTLS12 {
			t.Fatalf("status %d proto %s tls %+v", resp.StatusCode, resp.Proto, resp.TLS)
		}
		if ch := resp.Header.Get("WWW-Authenticate"); !strings.Contains(ch, `resource_metadata="https://`) {
			t.Fatalf("challenge %q does not name the https metadata", ch)
		}
	})
	t.Run("TLS11IsRefused", func(t *testing.T) {
		c := s.client(0)
		c.Transport.(*http.Transport).TLSClientConfig.MinVersion = tls.VersionTLS10
		c.Transport.(*http.Transport).TLSClientConfig.MaxVersion = tls.VersionTLS11
		if resp, err := c.Get(s.mcpURL); err == nil {
			resp.Body.Close()
			t.Fatal("a TLS 1.1 handshake succeeded")
		}
	})
	t.Run("PlainHTTPRequestForTheHTTPSHostIs421", func(t *testing.T) {
		// Sent to the plain-http listener, naming the https host.
		req, _ := http.NewRequest(http.MethodPost, s.authURL+"/mcp", strings.NewReader(`{}`))
		req.Host = strings.TrimSuffix(strings.TrimPrefix(s.mcpURL, "https://"), "/mcp")
		req.Header.Set("Authorization", "Bearer abc")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusMisdirectedRequest || !strings.Contains(string(b), "https only") {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
	})
	t.Run("TLSRequestForThePlainHTTPHostIs421", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, strings.TrimSuffix(s.mcpURL, "/mcp")+"/healthz", nil)
		req.Host = strings.TrimPrefix(s.authURL, "http://")
		resp, err := s.client(0).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMisdirectedRequest {
			t.Fatalf("status %d", resp.StatusCode)
		}
	})
	t.Run("ReloadServesTheNewCertificate", func(t *testing.T) {
		before := peerCert(t, s)
		if _, err := devca.Ensure(s.dir, []string{"127.0.0.2"}, time.Now()); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		gw, ts := newGatewayFromYAML(ctx, t, s.cfgYAML)
		t.Cleanup(func() { ts.Close() })
		if err := s.live.Swap(gw, func(old *gateway.Gateway) { old.Close() }); err != nil {
			t.Fatal(err)
		}
		after := peerCert(t, s)
		if after.Equal(before) {
			t.Fatal("a new connection after the reload still got the old certificate")
		}
	})
}

func peerCert(t *testing.T, s *tlsStack) *x509.Certificate {
	t.Helper()
	addr := strings.TrimSuffix(strings.TrimPrefix(s.mcpURL, "https://"), "/mcp")
	c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: s.roots, ServerName: "127.0.0.2"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0]
}

func TestGateway_HTTPSRouteWithoutACertificateIsRefused(t *testing.T) {
	cfg, err := config.Parse([]byte(`
runtime_flags: {mcp: true}
authenticate_service_url: http://127.0.0.1:8400
shared_secret: ZGVtby1vbmx5LXNoYXJlZC1zZWNyZXQtMzItYnl0ZXM=
cookie_secret: ZGVtby1vbmx5LWNvb2tpZS1zZWNyZXQtMzItYnl0ZXM=
idp_provider: oidc
idp_provider_url: http://127.0.0.1:1
idp_client_id: gw
idp_client_secret: s
storage: {type: memory}
routes:
  - from: https://127.0.0.2:8401/mcp
    to: http://127.0.0.1:1/mcp
    policy: {allow: {and: [{authenticated_user: true}]}}
    mcp: {server: {}}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = gateway.New(context.Background(), gateway.Options{Config: cfg, Module: wasmbuild.Module(t),
		TokenService: gateway.TokenService{Public: http.NotFoundHandler(), Internal: http.NotFoundHandler()}})
	if err == nil || !strings.Contains(err.Error(), "certificate_file") {
		t.Fatalf("err = %v", err)
	}
}
