package harness

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// exampleBuilds caches the built quick-start programs for the life of the test binary.
var exampleBuilds struct {
	mu    sync.Mutex
	paths map[string]string
}

// ExampleBin builds the quick-start program examples/<name> (demomcp, demoapp, llmapi) once per
// test binary into wasmtest/e2e/.work/bin and returns the binary's path.
func ExampleBin(t testing.TB, name string) string {
	t.Helper()
	exampleBuilds.mu.Lock()
	defer exampleBuilds.mu.Unlock()
	if p := exampleBuilds.paths[name]; p != "" {
		return p
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
			t.Fatalf("harness: go command not found to build examples/%s: %v", name, err)
		}
	}
	final := filepath.Join(dir, "example-"+name)
	tmp := fmt.Sprintf("%s.%d.tmp", final, os.Getpid())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, gobin, "build", "-o", tmp, "./examples/"+name)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS=", "GOARCH=", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		os.Remove(tmp)
		t.Fatalf("harness: go build ./examples/%s: %v\n%s", name, err, out)
	}
	if err := os.Rename(tmp, final); err != nil {
		os.Remove(tmp)
		t.Fatalf("harness: install examples/%s: %v", name, err)
	}
	if exampleBuilds.paths == nil {
		exampleBuilds.paths = map[string]string{}
	}
	exampleBuilds.paths[name] = final
	return final
}

// StartExample runs the quick-start program examples/<name> with -addr 127.0.0.1:0 and args,
// waits for its "READY http://ADDR" line and returns that base URL. It is stopped when the test
// ends; its log is shown if the test failed.
func StartExample(t testing.TB, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(ExampleBin(t, name), append([]string{"-addr", "127.0.0.1:0"}, args...)...)
	cmd.Env = childEnv()
	_, u := startProcess(t, name, cmd, func(line string) (string, bool) {
		v, ok := strings.CutPrefix(line, "READY ")
		return strings.TrimSpace(v), ok
	}, 30*time.Second)
	if !strings.HasPrefix(u, "http://127.0.0.1:") {
		t.Fatalf("harness: examples/%s printed a bad URL %q", name, u)
	}
	return u
}
