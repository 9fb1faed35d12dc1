package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/shared/paths"
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

// syncBuffer is a bytes.Buffer safe for the logger and the test at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// waitFor polls until cond holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// SIGHUP: a valid file is swapped in behind the listeners (a new route host starts being
// served) while requests are in flight, none failing; a bad file, or a storage change,
// keeps the running configuration; each reload logs which happened.
func TestRun_ReloadOnSIGHUP(t *testing.T) {
	t.Parallel()
	pub, in := freeAddr(t), freeAddr(t)
	base := strings.NewReplacer("PUBLIC", pub, "INTERNAL", in).Replace(validConfig)
	const newHost = "127.0.0.3:18402"
	withNewRoute := base + `  - from: http://` + newHost + `/mcp
    to: http://127.0.0.1:18411/mcp
    mcp: {server: {}}
`
	path := writeConfig(t, base)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hup := make(chan os.Signal, 1)
	done := make(chan int, 1)
	logs := &syncBuffer{}
	go func() { done <- runWith(ctx, []string{"-config", path, "-log-format", "text"}, logs, hup) }()

	client := &http.Client{Timeout: 5 * time.Second}
	jwks := func(host string) (int, error) {
		req, _ := http.NewRequest(http.MethodGet, "http://"+pub+paths.JWKS, nil)
		req.Host = host
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	waitFor(t, "the listeners", func() bool { code, err := jwks("127.0.0.2:18401"); return err == nil && code == 200 })
	if code, _ := jwks(newHost); code != http.StatusMisdirectedRequest {
		t.Fatalf("the new host before the reload: %d, want 421", code)
	}
	reloads := func() int { return strings.Count(logs.String(), "configuration reload") }

	// Requests in flight on both listeners during the reload.
	stopLoad := make(chan struct{})
	var wg sync.WaitGroup
	var failures atomic.Int64
	var served atomic.Int64
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stopLoad:
					return
				default:
				}
				var code int
				var err error
				if i%2 == 0 {
					code, err = jwks("127.0.0.2:18401")
				} else {
					var resp *http.Response
					if resp, err = client.Get("http://" + in + paths.Ready); err == nil {
						code = resp.StatusCode
						resp.Body.Close()
						if code == http.StatusServiceUnavailable { // the fake provider is not running
							code = http.StatusOK
						}
					}
				}
				served.Add(1)
				if err != nil || code != http.StatusOK {
					failures.Add(1)
					t.Errorf("request during reload: %d %v", code, err)
				}
			}
		}()
	}
	waitFor(t, "load", func() bool { return served.Load() > 50 })
	if err := os.WriteFile(path, []byte(withNewRoute), 0o600); err != nil {
		t.Fatal(err)
	}
	hup <- syscall.SIGHUP
	waitFor(t, "the reload", func() bool { code, _ := jwks(newHost); return code == http.StatusOK })
	n := served.Load()
	waitFor(t, "load after the reload", func() bool { return served.Load() > n+50 })
	close(stopLoad)
	wg.Wait()
	if failures.Load() != 0 {
		t.Fatalf("%d of %d requests failed during the reload", failures.Load(), served.Load())
	}
	if !strings.Contains(logs.String(), "configuration reloaded") {
		t.Errorf("no log line for the reload:\n%s", logs)
	}

	// A bad file and a storage change are refused; the reloaded configuration keeps serving.
	for _, bad := range []string{withNewRoute + "bogus: 1\n", strings.Replace(withNewRoute, "storage: {type: memory}", "storage: {type: sqlite, path: "+filepath.Join(t.TempDir(), "x.db")+"}", 1)} {
		before := reloads()
		if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		hup <- syscall.SIGHUP
		waitFor(t, "the refusal", func() bool { return reloads() > before })
		if code, err := jwks(newHost); err != nil || code != http.StatusOK {
			t.Errorf("after a refused reload the running configuration must serve: %d %v", code, err)
		}
	}
	if got := strings.Count(logs.String(), "configuration reload refused"); got != 2 {
		t.Errorf("%d refusal log lines, want 2:\n%s", got, logs)
	}
	if !strings.Contains(logs.String(), "bogus: unknown key") || !strings.Contains(logs.String(), "storage: the settings changed") {
		t.Errorf("the refusals do not say why:\n%s", logs)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d; logs:\n%s", code, logs)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("run did not return after cancel")
	}
}
