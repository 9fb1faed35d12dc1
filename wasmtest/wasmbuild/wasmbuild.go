// Package wasmbuild gives tests and benchmarks the real filter.wasm: the module named by the
// GATEWAY_WASM environment variable (what `make test` sets after `make wasm`), or else one
// built once per process with the same flags as `make wasm`. GATEWAY_WASM_CACHE, if set, is a
// directory where wazero keeps the compiled module across processes (build/instr.sh uses it:
// compiling under valgrind takes minutes). FloorModule does the same for the floor modules of
// wasmtest/floor, measuring instruments: read from GATEWAY_FLOOR_DIR/<name>.wasm when that is
// set (build/instr.sh counts should use it: the process's own instructions while it waits
// for a `go build` made counts jump by ~1M a stream), else built from source with the flags
// of `make wasm`.
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

	floorMu sync.Mutex
	floors  = map[string]*floorModule{}
)

// floorModule is one floor module, built and compiled once per process.
type floorModule struct {
	once sync.Once
	m    *host.Module
	err  error
}

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
	compileOnce.Do(func() { module, compileErr = compile(b) })
	if compileErr != nil {
		tb.Fatalf("compile filter.wasm: %v", compileErr)
	}
	return module
}

// FloorModule returns the floor module name (a directory of wasmtest/floor: "none", "empty",
// "reads", "mcp"), built from source and compiled once per process for the wasm host.
func FloorModule(tb testing.TB, name string) *host.Module {
	tb.Helper()
	floorMu.Lock()
	f := floors[name]
	if f == nil {
		f = &floorModule{}
		floors[name] = f
	}
	floorMu.Unlock()
	f.once.Do(func() {
		var b []byte
		var err error
		if dir := os.Getenv("GATEWAY_FLOOR_DIR"); dir != "" {
			b, err = os.ReadFile(filepath.Join(dir, name+".wasm"))
		} else {
			b, err = build("./wasmtest/floor/" + name)
		}
		if err != nil {
			f.err = err
			return
		}
		f.m, f.err = compile(b)
	})
	if f.err != nil {
		tb.Fatalf("floor module %s: %v", name, f.err)
	}
	return f.m
}

// compile compiles a module for the wasm host, in the GATEWAY_WASM_CACHE directory when set
// (wazero keys its cache by the module's bytes, so several modules can share one).
func compile(b []byte) (*host.Module, error) {
	var opts *host.CompileOptions
	if dir := os.Getenv("GATEWAY_WASM_CACHE"); dir != "" {
		cache, err := wazero.NewCompilationCacheWithDir(dir)
		if err != nil {
			return nil, err
		}
		opts = &host.CompileOptions{Cache: cache}
	}
	return host.Compile(context.Background(), b, opts)
}

func load() ([]byte, error) {
	if p := os.Getenv("GATEWAY_WASM"); p != "" {
		return os.ReadFile(p)
	}
	return build("./filter")
}

// build builds the reactor module of package pkg (a path relative to the repository's root)
// with the flags of `make wasm`.
func build(pkg string) ([]byte, error) {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	dir, err := os.MkdirTemp("", "filter-wasm-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "filter.wasm")
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-trimpath", "-ldflags=-s -w", "-o", out, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
	}
	return os.ReadFile(out)
}
