package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const validConfig = `
runtime_flags: {mcp: true}
authenticate_service_url: http://127.0.0.1:18400
shared_secret: ZGVtby1vbmx5LXNoYXJlZC1zZWNyZXQtMzItYnl0ZXM=
cookie_secret: ZGVtby1vbmx5LWNvb2tpZS1zZWNyZXQtMzItYnl0ZXM=
idp_provider: oidc
idp_provider_url: http://127.0.0.1:18409
idp_client_id: gw
idp_client_secret: s3cret
storage: {type: memory}
token_service: {address: "PUBLIC", internal_address: "INTERNAL"}
routes:
  - from: http://127.0.0.2:18401/mcp
    to: http://127.0.0.1:18410/mcp
    mcp: {server: {}}
`

func writeConfig(t *testing.T, s string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "gateway.yaml")
	if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRun_ConfigErrorsExitWithStatus2(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no -config", nil, "-config is required"},
		{"missing file", []string{"-config", "/nonexistent/gateway.yaml"}, "config: read"},
		{"unknown key", []string{"-config", writeConfig(t, validConfig+"bogus: 1\n")}, "bogus: unknown key"},
		{"bad log format", []string{"-config", "x", "-log-format", "xml"}, "-log-format"},
	}
	for _, tc := range cases {
		var stderr bytes.Buffer
		if got := run(context.Background(), tc.args, &stderr); got != 2 {
			t.Errorf("%s: exit %d, want 2", tc.name, got)
		}
		if !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%s: stderr %q, want it to mention %q", tc.name, stderr.String(), tc.want)
		}
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func TestRun_ServesUntilCanceled(t *testing.T) {
	t.Parallel()
	pub, in := freeAddr(t), freeAddr(t)
	cfg := strings.NewReplacer("PUBLIC", pub, "INTERNAL", in).Replace(validConfig)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var stderr bytes.Buffer
	go func() { done <- run(ctx, []string{"-config", writeConfig(t, cfg), "-log-format", "text"}, &stderr) }()
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := client.Get("http://" + in + "/healthz")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("internal listener never came up: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d; stderr:\n%s", code, stderr.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("run did not return after cancel")
	}
}

func TestRun_CheckConfig(t *testing.T) {
	t.Parallel()
	valid := strings.NewReplacer("PUBLIC", "127.0.0.1:18400", "INTERNAL", "127.0.0.1:18408").Replace(validConfig)
	invalid := strings.Replace(validConfig, "storage: {type: memory}", "storage: {type: floppy}", 1) // and PUBLIC, INTERNAL
	cases := []struct {
		name   string
		args   []string
		status int
		want   []string
	}{
		{"valid", []string{"-check-config", writeConfig(t, valid)}, 0, []string{"configuration is valid"}},
		{"problems name their keys", []string{"-check-config", writeConfig(t, invalid)}, 2, []string{"storage.type", "token_service.address", "token_service.internal_address"}},
		{"unknown key", []string{"-check-config", writeConfig(t, valid+"bogus: 1\n")}, 2, []string{"bogus: unknown key"}},
		{"missing file", []string{"-check-config", "/nonexistent/gateway.yaml"}, 2, []string{"config: read"}},
	}
	for _, tc := range cases {
		var stderr bytes.Buffer
		if got := run(context.Background(), tc.args, &stderr); got != tc.status {
			t.Errorf("%s: exit %d, want %d; stderr:\n%s", tc.name, got, tc.status, stderr.String())
		}
		for _, w := range tc.want {
			if !strings.Contains(stderr.String(), w) {
				t.Errorf("%s: stderr %q, want it to mention %q", tc.name, stderr.String(), w)
			}
		}
	}
}
