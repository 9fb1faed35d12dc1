// Package wasmbuild gives tests and benchmarks the real filter.wasm: the module named by the
// GATEWAY_WASM environment variable (what `make test` sets after `make wasm`), or else one
// built once per process with the same flags as `make wasm`. GATEWAY_WASM_CACHE, if set, is a
// directory where wazero keeps the compiled module across processes (build/instr.sh uses it:
// compiling under valgrind takes minutes).
package wasmbuild

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/mcpmesh/gateway/wasmtest/host"
	"github.com/tetratelabs/wazero"
)

var (
	once     sync.Once
	wasm     []byte
	buildErr error

	compileOnce sync.Once
	module      *host.Module
	compileErr  error
)

// Filter returns the bytes of filter.wasm, failing tb when it can be neither read nor built.
func Filter(tb testing.TB) []byte {
	tb.Helper()
	once.Do(func() { wasm, buildErr = load() })
	if buildErr != nil {
		tb.Fatalf("filter.wasm: %v", buildErr)
	}
	return wasm
}

// Module returns filter.wasm compiled once per process for the wasm host.
func Module(tb testing.TB) *host.Module {
	tb.Helper()
	b := Filter(tb)
	compileOnce.Do(func() {
		var opts *host.CompileOptions
		if dir := os.Getenv("GATEWAY_WASM_CACHE"); dir != "" {
			cache, err := wazero.NewCompilationCacheWithDir(dir)
			if err != nil {
				compileErr = err
				return
			}
			opts = &host.CompileOptions{Cache: cache}
		}
		module, compileErr = host.Compile(context.Background(), b, opts)
	})
	if compileErr != nil {
		tb.Fatalf("compile filter.wasm: %v", compileErr)
	}
	return module
}

func load() ([]byte, error) {
	if p := os.Getenv("GATEWAY_WASM"); p != "" {
		return os.ReadFile(p)
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	dir, err := os.MkdirTemp("", "filter-wasm-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "filter.wasm")
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-trimpath", "-ldflags=-s -w", "-o", out, "./filter")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build ./filter: %v\n%s", err, b)
	}
	return os.ReadFile(out)
}
