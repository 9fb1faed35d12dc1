package host

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/tetratelabs/wazero"
)

// Test fixtures shared by every test of the binary: the guest module is built and compiled
// once, and compiled code is cached across runtimes.
var (
	fixtureDir string
	cache      = wazero.NewCompilationCache()

	guestOnce  sync.Once
	guestWasm  []byte
	guestMod   *Module
	guestErr   error
	filterOnce sync.Once
	filterWasm []byte
	filterMod  *Module
	filterErr  error
	filterPath string
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "wasmhost-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fixtureDir = dir
	code := m.Run()
	if guestMod != nil {
		guestMod.Close(context.Background())
	}
	if filterMod != nil {
		filterMod.Close(context.Background())
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// buildWasm builds the Go package at pkg (a path relative to this package) for wasip1 as a
// reactor module.
func buildWasm(pkg, out string) ([]byte, error) {
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build %s: %w\n%s", pkg, err, b)
	}
	return os.ReadFile(out)
}

// testGuest returns the compiled test guest (testdata/guest).
func testGuest(t testing.TB) *Module {
	t.Helper()
	guestOnce.Do(func() {
		guestWasm, guestErr = buildWasm("./testdata/guest", filepath.Join(fixtureDir, "guest.wasm"))
		if guestErr == nil {
			guestMod, guestErr = Compile(context.Background(), guestWasm, &CompileOptions{Cache: cache})
		}
	})
	if guestErr != nil {
		t.Fatal(guestErr)
	}
	return guestMod
}

// realFilter returns the compiled real filter module: $GATEWAY_WASM if set, otherwise
// ./filter built into a temporary directory.
func realFilter(t testing.TB) (*Module, []byte) {
	t.Helper()
	filterOnce.Do(func() {
		if p := os.Getenv("GATEWAY_WASM"); p != "" {
			filterPath = p
			filterWasm, filterErr = os.ReadFile(p)
		} else {
			filterPath = filepath.Join(fixtureDir, "filter.wasm")
			filterWasm, filterErr = buildWasm("../../filter", filterPath)
		}
		if filterErr == nil {
			filterMod, filterErr = Compile(context.Background(), filterWasm, &CompileOptions{Cache: cache})
		}
	})
	if filterErr != nil {
		t.Fatal(filterErr)
	}
	return filterMod, filterWasm
}

// newHost starts a host on the test guest and closes it at the end of the test.
func newHost(t testing.TB, opts Options) *Host {
	t.Helper()
	h, err := New(context.Background(), testGuest(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}
