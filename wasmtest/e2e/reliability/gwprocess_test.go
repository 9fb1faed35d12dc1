package reliability

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/wasmtest/gateway"
	"github.com/mcpmesh/gateway/wasmtest/host"
	"github.com/mcpmesh/gateway/wasmtest/wasmbuild"
)

// gatewayProcessEnv, when set in the environment of this package's test binary, makes it a
// gateway process instead of running tests (TestMain): the soak measures the gateway's
// memory apart from the load generator's. Its value is the configuration file.
const gatewayProcessEnv = "RELIABILITY_GATEWAY_PROCESS"

func TestMain(m *testing.M) {
	if cfg := os.Getenv(gatewayProcessEnv); cfg != "" {
		os.Exit(runGatewayProcess(cfg))
	}
	os.Exit(m.Run())
}

// gatewayMemory is what a gateway process reports on GET /memory.
type gatewayMemory struct {
	// VMs is each filter VM's linear memory in bytes.
	VMs []uint32 `json:"vms"`
	// HeapAlloc is the process's live Go heap after a collection.
	HeapAlloc uint64 `json:"heap_alloc"`
}

// runGatewayProcess is the gateway process: the gateway of the configuration file at
// cfgPath (the wasm module at RELIABILITY_GATEWAY_WASM) in front of the remote token service
// at RELIABILITY_GATEWAY_TS_PUBLIC / _INTERNAL (comma-separated URLs), serving the
// listeners it inherited as files 3 (authenticate host) and 4 (MCP route) and GET /memory
// on file 5. It runs until SIGTERM or its parent dies.
func runGatewayProcess(cfgPath string) int {
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	fail := func(err error) int {
		logger.Error("gateway process", "error", err.Error())
		return 1
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		return fail(err)
	}
	wasm, err := os.ReadFile(os.Getenv("RELIABILITY_GATEWAY_WASM"))
	if err != nil {
		return fail(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	mod, err := host.Compile(ctx, wasm, nil)
	if err != nil {
		return fail(err)
	}
	ts, err := gateway.RemoteTokenService(strings.Split(os.Getenv("RELIABILITY_GATEWAY_TS_PUBLIC"), ","),
		strings.Split(os.Getenv("RELIABILITY_GATEWAY_TS_INTERNAL"), ","), logger)
	if err != nil {
		return fail(err)
	}
	// The filter logs at warn, as this process prints: at info the host would also keep its
	// authorization records, up to host.Options.MaxLogEntries of them (100,000 by default,
	// some 30 MB; the localgateway command keeps 1,000), which is the host's capture for
	// tests, not the gateway's memory (RELIABILITY.md, soak).
	gw, err := gateway.New(ctx, gateway.Options{Config: cfg, Module: mod, TokenService: ts, Logger: logger,
		HostOptions: func(o *host.Options) { o.LogLevel = host.LogWarn }})
	if err != nil {
		return fail(err)
	}
	defer gw.Close()
	var ls []net.Listener
	for fd := uintptr(3); fd <= 5; fd++ {
		l, err := net.FileListener(os.NewFile(fd, fmt.Sprintf("listener-%d", fd)))
		if err != nil {
			return fail(err)
		}
		ls = append(ls, l)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /memory", func(w http.ResponseWriter, _ *http.Request) {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		m := gatewayMemory{HeapAlloc: ms.HeapAlloc}
		for i := range gw.Host().Workers() {
			m.VMs = append(m.VMs, gw.Host().MemoryBytes(i))
		}
		_ = json.NewEncoder(w).Encode(m)
	})
	// A heap profile, to find what grows: go tool pprof http://<admin>/debug/pprof/heap.
	mux.Handle("GET /debug/pprof/heap", pprof.Handler("heap"))
	admin := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { <-ctx.Done(); _ = admin.Close() }()
	go func() { _ = admin.Serve(ls[2]) }()
	if err := gw.Serve(ctx, ls[:2]); err != nil && ctx.Err() == nil {
		return fail(err)
	}
	return 0
}

// gatewayProcess is the stack's gateway as a separate process (stackOptions.GatewayProcess).
type gatewayProcess struct {
	cmd   *exec.Cmd
	admin string
}

// startGatewayProcess starts this test binary as the gateway of s (its configuration text,
// the listeners startStack opened) in front of the token service replicas at public and
// internal, and waits until it answers.
func startGatewayProcess(t *testing.T, s *rstack, public, internal []string) *gatewayProcess {
	t.Helper()
	dir := t.TempDir()
	cfgPath, wasmPath := filepath.Join(dir, "gateway.yaml"), filepath.Join(dir, "filter.wasm")
	if err := os.WriteFile(cfgPath, []byte(replicaYAML(s.YAML, "127.0.0.1:1", "127.0.0.1:2")), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(wasmPath, wasmbuild.Filter(t), 0o600); err != nil {
		t.Fatal(err)
	}
	adminL := listen(t)
	var files []*os.File
	for _, l := range []net.Listener{s.authL, s.mcpL, adminL} {
		f, err := l.(*net.TCPListener).File()
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
		l.Close() // the process holds its own copy
	}
	out := newTestWriter(t)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), gatewayProcessEnv+"="+cfgPath, "RELIABILITY_GATEWAY_WASM="+wasmPath,
		"RELIABILITY_GATEWAY_TS_PUBLIC="+strings.Join(public, ","), "RELIABILITY_GATEWAY_TS_INTERNAL="+strings.Join(internal, ","))
	cmd.ExtraFiles = files
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the gateway process: %v", err)
	}
	for _, f := range files {
		f.Close()
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	g := &gatewayProcess{cmd: cmd, admin: "http://" + adminL.Addr().String()}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := g.memory(); err == nil {
			return g
		}
		select {
		case <-done:
			t.Fatalf("the gateway process exited before it was ready")
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the gateway process is not ready after 60s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// pid is the gateway process's ID.
func (g *gatewayProcess) pid() int { return g.cmd.Process.Pid }

// memory asks the gateway process for its filter VMs' linear memory and its live heap.
func (g *gatewayProcess) memory() (gatewayMemory, error) {
	var m gatewayMemory
	resp, err := httpClient.Get(g.admin + "/memory")
	if err != nil {
		return m, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return m, fmt.Errorf("/memory: %d", resp.StatusCode)
	}
	return m, json.NewDecoder(resp.Body).Decode(&m)
}
