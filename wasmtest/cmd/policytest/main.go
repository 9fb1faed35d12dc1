// Command policytest plays a cases file through the real filter.wasm, under the plugin
// configuration the local gateway gives it for a gateway configuration, and reports each
// case's expected and actual outcome (docs/policy-testing.md):
//
//	go run ./wasmtest/cmd/policytest -config examples/gateway.yaml -cases examples/policy-cases.yaml
//
// Exit status: 0 when every case passes, 1 when one does not (or the filter cannot be run),
// 2 for bad flags, a bad configuration or a bad cases file (naming the key and the line).
// The work is done by wasmtest/policytest.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/mcpmesh/gateway/wasmtest/host"
	"github.com/mcpmesh/gateway/wasmtest/policytest"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("policytest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "gateway configuration file (required)")
	casesPath := fs.String("cases", "", "cases file (required)")
	wasmPath := fs.String("wasm", os.Getenv("GATEWAY_WASM"), "filter.wasm to run; built from this module when empty")
	junit := fs.String("junit", "", "also write the results as JUnit XML to this file")
	explain := fs.Bool("explain", false, "print, per case, which criteria of allow and deny held and why")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *configPath == "" || *casesPath == "" {
		fmt.Fprintln(stderr, "policytest: -config and -cases are required")
		return 2
	}
	ctx := context.Background()
	// The configuration and the cases are checked before the module is built.
	cases, err := policytest.LoadCases(*casesPath)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	tester, err := policytest.Load(*configPath, nil)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	mod, err := module(ctx, *wasmPath, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "policytest: %v\n", err)
		return 1
	}
	tester = tester.WithModule(mod)
	start := time.Now()
	results, err := tester.Run(ctx, cases)
	if err != nil {
		fmt.Fprintf(stderr, "policytest: %v\n", err)
		return 2
	}
	policytest.WriteTable(stdout, results)
	if *explain {
		for _, r := range results {
			fmt.Fprintf(stdout, "\n%s\n  %s\n", r.Case.Name, strings.Join(policytest.Explain(r), "\n  "))
		}
	}
	if *junit != "" {
		f, err := os.Create(*junit)
		if err == nil {
			err = errors.Join(policytest.WriteJUnit(f, filepath.Base(*casesPath), results, time.Since(start)), f.Close())
		}
		if err != nil {
			fmt.Fprintf(stderr, "policytest: -junit: %v\n", err)
			return 1
		}
	}
	for _, r := range results {
		if !r.Passed() {
			return 1
		}
	}
	return 0
}

// module compiles the module at path, or builds filter.wasm from the module this command
// runs in (as make wasm does) when path is empty.
func module(ctx context.Context, path string, stderr io.Writer) (*host.Module, error) {
	if path == "" {
		dir, err := os.MkdirTemp("", "policytest-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		path = filepath.Join(dir, "filter.wasm")
		fmt.Fprintln(stderr, "policytest: building filter.wasm (pass -wasm or GATEWAY_WASM to skip)")
		cmd := exec.CommandContext(ctx, "go", "build", "-buildmode=c-shared", "-trimpath", "-ldflags=-s -w", "-o", path, "github.com/mcpmesh/gateway/filter")
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("build filter.wasm: %v\n%s", err, out)
		}
	}
	return policytest.CompileFile(ctx, path)
}
