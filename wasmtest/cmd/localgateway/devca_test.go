package main

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpmesh/gateway/wasmtest/devca"
	"github.com/mcpmesh/gateway/wasmtest/wasmbuild"
)

// TestRun_DevCAIssuesForTheConfigsHTTPSHosts: -dev-ca with the quick start's configuration
// makes the CA and a certificate for its https host, and the files load as the configuration's
// certificate; a CA key others can read is refused (exit 1).
func TestRun_DevCAIssuesForTheConfigsHTTPSHosts(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "tls")
	var stderr bytes.Buffer
	if code := run([]string{"-dev-ca", dir, "-config", "../../../examples/gateway.yaml"}, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	p := devca.PathsIn(dir)
	if !strings.Contains(stderr.String(), "NODE_EXTRA_CA_CERTS="+p.CA) {
		t.Errorf("no client hint: %s", stderr.String())
	}
	b, err := os.ReadFile(p.Cert)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(p.Cert, p.Key)
	if err != nil {
		t.Fatalf("the issued pair does not load: %v", err)
	}
	if ips := pair.Leaf.IPAddresses; len(ips) != 1 || ips[0].String() != "127.0.0.2" {
		t.Errorf("certificate for %v, want the quick start's https host 127.0.0.2", ips)
	}
	if len(b) == 0 {
		t.Fatal("empty certificate")
	}
	if err := os.Chmod(p.CAKey, 0o644); err != nil {
		t.Fatal(err)
	}
	stderr.Reset()
	if code := run([]string{"-dev-ca", dir}, &stderr); code != 1 || !strings.Contains(stderr.String(), "lets others read") {
		t.Fatalf("a world-readable CA key: exit %d, %s", code, stderr.String())
	}
}

// TestRun_TakenAddressFailsAtOnceNamingIt: the local gateway is ready only once every listener
// is bound; a taken address ends it with exit 1 and the address in the message.
func TestRun_TakenAddressFailsAtOnceNamingIt(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	dir := t.TempDir()
	wasm := filepath.Join(dir, "filter.wasm")
	if err := os.WriteFile(wasm, wasmbuild.Filter(t), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "gateway.yaml")
	y := fmt.Sprintf(`runtime_flags: {mcp: true}
authenticate_service_url: http://127.0.0.1:1
shared_secret: ZGVtby1vbmx5LXNoYXJlZC1zZWNyZXQtMzItYnl0ZXM=
cookie_secret: ZGVtby1vbmx5LWNvb2tpZS1zZWNyZXQtMzItYnl0ZXM=
idp_provider: oidc
idp_provider_url: http://127.0.0.1:1
idp_client_id: gw
idp_client_secret: s
storage: {type: memory}
routes:
  - from: http://%s/mcp
    to: http://127.0.0.1:1/mcp
    policy: {allow: {and: [{authenticated_user: true}]}}
    mcp: {server: {}}
`, taken.Addr())
	if err := os.WriteFile(cfg, []byte(y), 0o600); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	code := run([]string{"-config", cfg, "-wasm", wasm}, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "listen on "+taken.Addr().String()) || strings.Contains(stderr.String(), "local gateway ready") {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
}
