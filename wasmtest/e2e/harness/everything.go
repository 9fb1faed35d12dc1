package harness

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// everythingPkg is the Go SDK's conformance fixture; its module version comes from go.mod.
const everythingPkg = "github.com/modelcontextprotocol/go-sdk/conformance/everything-server"

// everythingBuild caches the built everything-server for the life of the test binary.
var everythingBuild struct {
	mu   sync.Mutex
	path string
}

// EverythingServerBin builds the Go SDK's conformance everything-server (at the go-sdk version
// in go.mod) once per test binary and returns the binary's path. The binary lives in
// wasmtest/e2e/.work/bin (ignored by git); concurrent test binaries each build and rename
// atomically, and the Go build cache makes repeated builds cheap.
func EverythingServerBin(t testing.TB) string {
	t.Helper()
	everythingBuild.mu.Lock()
	defer everythingBuild.mu.Unlock()
	if everythingBuild.path != "" {
		return everythingBuild.path
	}
	root := RepoRoot(t)
	dir := filepath.Join(root, "wasmtest", "e2e", ".work", "bin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("harness: create %s: %v", dir, err)
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		if gr := os.Getenv("GOROOT"); gr != "" {
			gobin = filepath.Join(gr, "bin", "go")
		} else {
			t.Fatalf("harness: go command not found to build the everything-server: %v", err)
		}
	}
	final := filepath.Join(dir, "everything-server")
	tmp := fmt.Sprintf("%s.%d.tmp", final, os.Getpid())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, gobin, "build", "-o", tmp, everythingPkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS=", "GOARCH=", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		os.Remove(tmp)
		t.Fatalf("harness: go build %s: %v\n%s", everythingPkg, err, out)
	}
	if err := os.Rename(tmp, final); err != nil {
		os.Remove(tmp)
		t.Fatalf("harness: install everything-server: %v", err)
	}
	everythingBuild.path = final
	return final
}

// StartEverythingServer runs the Go SDK's conformance everything-server in stateful mode
// (-stateless=false, as the conformance suite needs) on a free 127.0.0.1 port and returns its
// MCP URL, http://127.0.0.1:PORT/mcp (the server answers MCP on every path). It is stopped when
// the test ends.
func StartEverythingServer(t testing.TB) string {
	t.Helper()
	return startEverything(t, "-stateless=false")
}

// StartStatelessEverythingServer runs the everything-server in its default stateless mode, the
// one MCP 2026-07-28 (no sessions) is run against: `conformance server --requirements
// 2026-07-28` of suite 0.2.0-alpha.12.
func StartStatelessEverythingServer(t testing.TB) string {
	t.Helper()
	return startEverything(t)
}

func startEverything(t testing.TB, flags ...string) string {
	t.Helper()
	bin := EverythingServerBin(t)
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := freePort()
		if err != nil {
			t.Fatalf("harness: %v", err)
		}
		addr := "127.0.0.1:" + strconv.Itoa(port)
		cmd := exec.Command(bin, append([]string{"-http", addr}, flags...)...)
		cmd.Env = childEnv()
		p, _ := startProcess(t, "everything-server", cmd, nil, 0)
		base := "http://" + addr
		if err := waitHTTP(p, base+"/", 15*time.Second); err != nil {
			// Most likely the port was taken between freePort and the bind: try another.
			lastErr = err
			p.stop()
			continue
		}
		return base + "/mcp"
	}
	t.Fatalf("harness: start everything-server: %v", lastErr)
	return ""
}
