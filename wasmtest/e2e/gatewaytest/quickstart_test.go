package gatewaytest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/tokensvc/server"
	"github.com/mcpmesh/gateway/wasmtest/devca"
	"github.com/mcpmesh/gateway/wasmtest/e2e/harness"
	"github.com/mcpmesh/gateway/wasmtest/gateway"
	"github.com/mcpmesh/gateway/wasmtest/wasmbuild"
)

// TestQuickstart_InspectorSignsInAndSeesWhoami runs the quick start's own configuration
// (examples/gateway.yaml: its https MCP route, policy and certificate keys; only the ports, the
// identity provider's URL and client, and the file paths are replaced, so that tests may run
// side by side) with its demo MCP server (examples/demomcp), and signs in with the MCP
// Inspector 2.12 CLI on Node 22, trusting the development CA as the README says: it calls
// whoami, which the example policy lets through, and sees the identity the gateway passes on.
func TestQuickstart_InspectorSignsInAndSeesWhoami(t *testing.T) {
	raw, err := os.ReadFile("../../../examples/gateway.yaml")
	if err != nil {
		t.Fatal(err)
	}
	idp := harness.StartIDP(t, harness.IDPOptions{})
	dir := t.TempDir()

	bin := filepath.Join(dir, "demomcp")
	if out, err := exec.Command("go", "build", "-o", bin, "../../../examples/demomcp").CombinedOutput(); err != nil {
		t.Fatalf("build demomcp: %v\n%s", err, out)
	}
	upL := listen(t, "127.0.0.1")
	upAddr := upL.Addr().String()
	upL.Close()
	demo := exec.Command(bin, "-addr", upAddr)
	if err := demo.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = demo.Process.Kill(); _ = demo.Wait() })

	authL, mcpL, appL := listen(t, "127.0.0.1"), listen(t, "127.0.0.2"), listen(t, "127.0.0.3")
	mcpURL := "https://" + mcpL.Addr().String() + "/mcp"
	p, err := devca.Ensure(filepath.Join(dir, "tls"), []string{"127.0.0.2"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	y := string(raw)
	for _, r := range []struct{ from, to string }{
		{"http://127.0.0.1:8400", "http://" + authL.Addr().String()},
		{"https://127.0.0.2:8401/mcp", mcpURL},
		{"http://127.0.0.3:8402", "http://" + appL.Addr().String()},
		{"http://127.0.0.1:8410/mcp", "http://" + upAddr + "/mcp"},
		{"http://127.0.0.1:8409", idp.Issuer},
		{"idp_client_id: gateway", "idp_client_id: " + idp.ClientID},
		{"idp_client_secret: demo-idp-secret", "idp_client_secret: " + idp.ClientSecret},
		{"../build/out/quickstart.db", filepath.Join(dir, "quickstart.db")},
		{"../build/out/tls/cert.pem", p.Cert},
		{"../build/out/tls/key.pem", p.Key},
	} {
		if !strings.Contains(y, r.from) {
			t.Fatalf("examples/gateway.yaml no longer contains %q: update this test", r.from)
		}
		y = strings.ReplaceAll(y, r.from, r.to)
	}
	cfg, err := config.Parse([]byte(y), nil)
	if err != nil {
		t.Fatalf("the quick start configuration: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ts, err := server.New(ctx, cfg)
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
	go func() { defer close(done); _ = gw.Serve(ctx, []net.Listener{authL, mcpL, appL}) }()
	t.Cleanup(func() { cancel(); <-done; gw.Close(); ts.Close() })
	waitUp(t, "http://"+upAddr+"/mcp")

	pemCA, _ := os.ReadFile(p.CA)
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pemCA)
	browserClient := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	in := harness.NewInspector(t, mcpURL, browserClient, "NODE_EXTRA_CA_CERTS="+p.CA)
	run, err := in.Run("tools/call", "--tool-name", "whoami", "--tool-args-json", "{}")
	if err != nil {
		t.Fatal(err)
	}
	if !run.SignedIn || run.ExitCode != 0 {
		t.Fatalf("signed in %v, exit %d: %v\n%s", run.SignedIn, run.ExitCode, run.Result, run.Stderr)
	}
	res, _ := run.Result["result"].(map[string]any)
	content, _ := res["content"].([]any)
	text := ""
	for _, c := range content {
		if m, ok := c.(map[string]any); ok {
			s, _ := m["text"].(string)
			text += s
		}
	}
	if !strings.Contains(text, `"email":"alice@example.com"`) {
		t.Fatalf("whoami says %q, want alice's asserted identity", text)
	}
	// The same client is told why a tool is refused, as a result.
	denied, err := in.Run("tools/call", "--tool-name", "delete_everything", "--tool-args-json", "{}")
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := denied.Result["result"].(map[string]any); r["isError"] != true {
		t.Fatalf("delete_everything: exit %d, %v", denied.ExitCode, denied.Result)
	}
}

// waitUp waits until url answers at all.
func waitUp(t *testing.T, url string) {
	t.Helper()
	for i := 0; i < 100; i++ {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s did not come up", url)
}
