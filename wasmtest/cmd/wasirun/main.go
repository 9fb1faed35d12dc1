// Command wasirun runs a wasip1 command module — typically a Go test binary built with
// `GOOS=wasip1 GOARCH=wasm go test -c` — on wazero's compiler, the engine of wasmtest/host, so
// that the same benchmarks can be compared natively, under V8 (build/wasi-node.mjs) and under
// wazero. `make bench` (build/bench.sh) uses it.
//
//	wasirun MODULE.wasm [ARGS...]
//
// The module sees the host's file system at /, the environment variable PWD set to the current
// directory (Go's wasip1 port takes its working directory from it), GOGC from WASI_GOGC if set,
// the host's variables whose names start with BENCH_ (a benchmark's settings, e.g.
// BENCH_LOG_INFO), the real clocks and crypto/rand. The exit status is the module's. WASIRUN_CACHE, if set, is a
// directory where wazero keeps compiled code across runs (build/instr.sh: compiling a test
// binary under valgrind takes minutes).
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: wasirun MODULE.wasm [ARGS...]")
		os.Exit(2)
	}
	os.Exit(run(context.Background(), os.Args[1], os.Args[2:]))
}

func run(ctx context.Context, file string, args []string) int {
	bin, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintln(os.Stderr, "wasirun:", err)
		return 2
	}
	cfg := wazero.NewRuntimeConfigCompiler()
	if dir := os.Getenv("WASIRUN_CACHE"); dir != "" {
		cache, err := wazero.NewCompilationCacheWithDir(dir)
		if err != nil {
			fmt.Fprintln(os.Stderr, "wasirun:", err)
			return 2
		}
		cfg = cfg.WithCompilationCache(cache)
	}
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	defer rt.Close(ctx)
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	wd, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(os.Stderr, "wasirun:", err)
		return 2
	}
	mcfg := wazero.NewModuleConfig().
		WithArgs(append([]string{file}, args...)...).
		WithEnv("PWD", wd).
		WithFSConfig(wazero.NewFSConfig().WithDirMount("/", "/")).
		WithStdin(os.Stdin).WithStdout(os.Stdout).WithStderr(os.Stderr).
		WithSysWalltime().WithSysNanotime().WithSysNanosleep().
		WithRandSource(rand.Reader)
	if g := os.Getenv("WASI_GOGC"); g != "" {
		mcfg = mcfg.WithEnv("GOGC", g)
	}
	for _, kv := range os.Environ() {
		if k, v, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "BENCH_") {
			mcfg = mcfg.WithEnv(k, v)
		}
	}
	_, err = rt.InstantiateWithConfig(ctx, bin, mcfg)
	var exit *sys.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		return int(exit.ExitCode())
	default:
		fmt.Fprintln(os.Stderr, "wasirun:", err)
		return 1
	}
}
