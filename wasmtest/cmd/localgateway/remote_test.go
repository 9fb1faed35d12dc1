package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/tokensvc/server"
	"github.com/mcpmesh/gateway/tokensvc/store/memory"
	"github.com/mcpmesh/gateway/wasmtest/host"
	"github.com/mcpmesh/gateway/wasmtest/wasmbuild"
)

func TestRun_RemoteTokenServiceFlagsAreChecked(t *testing.T) {
	t.Parallel()
	cfg := filepath.Join("..", "..", "..", "examples", "gateway.yaml")
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"-config", cfg, "-token-service-public", "http://127.0.0.1:1"}, "-token-service-public and -token-service-internal go together"},
		{[]string{"-config", cfg, "-token-service-internal", "http://127.0.0.1:1"}, "-token-service-public and -token-service-internal go together"},
		{[]string{"-config", cfg, "-token-service-public", "ftp://x", "-token-service-internal", "http://127.0.0.1:1"}, `public URL "ftp://x": want http(s)://host:port`},
		{[]string{"-config", cfg, "-token-service-public", "http://127.0.0.1:1/path", "-token-service-internal", "http://127.0.0.1:1"}, "want http(s)://host:port"},
	}
	for _, c := range cases {
		var stderr bytes.Buffer
		if code := run(c.args, &stderr); code != 2 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("run(%v) = %d, stderr %q; want 2 and %q", c.args, code, stderr.String(), c.want)
		}
	}
}

// With -token-service-public/-internal the local gateway runs no token service of its own:
// gateway paths and check calls go to the replicas named (a dead one is skipped), gateway
// paths with their original Host.
func TestLocalGateway_RemoteTokenService(t *testing.T) {
	t.Parallel()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	}))
	t.Cleanup(up.Close)
	authL, mcpL := listenLocal(t), listenLocal(t)
	f := &fixture{t: t, path: filepath.Join(t.TempDir(), "gateway.yaml"), authURL: "http://" + authL.Addr().String(),
		mcpURL: "http://" + mcpL.Addr().String() + "/mcp", upstream: up.URL + "/mcp", logs: &syncBuffer{}}
	f.write(f.yaml(f.authURL, allowAlice, "[user]"))
	cfg, err := config.Load(f.path)
	if err != nil {
		t.Fatal(err)
	}
	// The token service, elsewhere: its listeners record the Host they were asked for.
	st := memory.New()
	ts, err := server.New(context.Background(), cfg, server.WithStore(st), server.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ts.Close() })
	hosts := make(chan string, 16)
	pub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case hosts <- r.Host + " " + r.Header.Get("X-Forwarded-For"):
		default:
		}
		ts.PublicHandler().ServeHTTP(w, r)
	}))
	t.Cleanup(pub.Close)
	in := httptest.NewServer(ts.InternalHandler())
	t.Cleanup(in.Close)
	dl := listenLocal(t)
	dead := "http://" + dl.Addr().String()
	dl.Close() // connection refused
	fs := flag.NewFlagSet("localgateway", flag.ContinueOnError)
	remote := addRemoteFlags(fs)
	if err := fs.Parse([]string{"-token-service-public", dead + "," + pub.URL, "-token-service-internal", in.URL + "," + dead}); err != nil {
		t.Fatal(err)
	}
	rts, err := remote.tokenService(nil)
	if err != nil || rts == nil {
		t.Fatalf("remote token service: %v", err)
	}
	logger, _ := newLogger("text", host.LogInfo, f.logs)
	f.app = &app{path: f.path, module: wasmbuild.Module(t), workers: 2, logger: logger, wasmLevel: host.LogInfo, grace: time.Second, remote: rts}
	ctx, cancel := context.WithCancel(context.Background())
	if err := f.app.start(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if f.app.cur.ts != nil || f.app.cur.st.Store != nil {
		t.Fatal("a token service or a store runs in the gateway")
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = f.app.live.Serve(ctx, []net.Listener{authL, mcpL}) }()
	t.Cleanup(func() { cancel(); <-done; f.app.close() })
	f.token = seedToken(t, st)

	for range 4 { // round-robin over a dead replica and a live one
		req, _ := http.NewRequest(http.MethodGet, strings.TrimSuffix(f.mcpURL, "/mcp")+"/.well-known/oauth-authorization-server", nil)
		req.Header.Set("X-Forwarded-For", "203.0.113.9")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("metadata through the remote token service: %d", resp.StatusCode)
		}
		if got, want := <-hosts, mcpL.Addr().String()+" 127.0.0.1"; got != want {
			t.Fatalf("the token service saw Host and X-Forwarded-For %q, want %q (the original Host, a fresh X-Forwarded-For)", got, want)
		}
		if status, err := f.call(http.DefaultClient); err != nil || status != http.StatusOK {
			t.Fatalf("tool call checked by the remote token service: %d %v", status, err)
		}
	}
}

func listenLocal(t *testing.T) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return l
}
