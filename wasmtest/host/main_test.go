package host

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
// ./filter built into a temporary directory; compiled into $GATEWAY_WASM_CACHE if set.
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
			c := cache
			if dir := os.Getenv("GATEWAY_WASM_CACHE"); dir != "" {
				// build/instr.sh compiles once, outside valgrind, into this directory.
				if c, filterErr = wazero.NewCompilationCacheWithDir(dir); filterErr != nil {
					return
				}
			}
			filterMod, filterErr = Compile(context.Background(), filterWasm, &CompileOptions{Cache: c})
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

// testCtx returns a context that ends with the test or after 10 seconds.
func testCtx(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// get builds request headers for path with extra name/value pairs.
func get(path string, kv ...string) Headers {
	h := Headers{{":method", "GET"}, {":path", path}, {":authority", "example.test"}, {":scheme", "http"}}
	for i := 0; i+1 < len(kv); i += 2 {
		h = append(h, Header{kv[i], kv[i+1]})
	}
	return h
}

// post is get with method POST.
func post(path string, kv ...string) Headers {
	h := get(path, kv...)
	h[0].Value = "POST"
	return h
}

// stream opens a stream that is closed at the end of the test.
func stream(t testing.TB, h *Host) *Stream {
	t.Helper()
	s, err := h.NewStream(testCtx(t), StreamInfo{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// waitLog waits for a captured log line containing substr.
func waitLog(t testing.TB, h *Host, substr string) LogEntry {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	e, err := h.WaitLog(ctx, substr)
	if err != nil {
		t.Fatalf("no log line containing %q; logs:\n%s", substr, dumpLogs(h))
	}
	return e
}

func dumpLogs(h *Host) string {
	var b strings.Builder
	for _, e := range h.Logs() {
		src := "wasm"
		if e.Host {
			src = "host"
		}
		fmt.Fprintf(&b, "  [%s %s w%d c%d] %s\n", src, e.Level, e.Worker, e.Context, e.Message)
	}
	return b.String()
}

func contextWithTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, d)
}
