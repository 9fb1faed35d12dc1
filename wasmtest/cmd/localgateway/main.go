// Command localgateway runs the gateway on one machine without Envoy: it listens on the
// host:port of every route's `from` and of authenticate_service_url, runs each request
// through filter.wasm in the wazero host, serves the gateway's own paths from an in-process
// token service, and forwards the rest to the routes' upstreams.
//
//	go run ./wasmtest/cmd/localgateway -config examples/gateway.yaml
//
// It is the host of the quick start (make run) and of CI, standing in for Envoy; it is not a
// production component. A configuration it cannot use stops it at once with a message naming
// the key (exit 2).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/tokensvc/server"
	"github.com/mcpmesh/gateway/wasmtest/gateway"
	"github.com/mcpmesh/gateway/wasmtest/host"
)

func main() { os.Exit(run(os.Args[1:], os.Stderr)) }

func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("localgateway", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "gateway configuration file (required)")
	wasmPath := fs.String("wasm", envOr("GATEWAY_WASM", "build/out/filter.wasm"), "filter.wasm to run (make wasm builds it)")
	workers := fs.Int("workers", 2, "filter VMs (Envoy worker threads)")
	logFormat := fs.String("log-format", "text", "log format: text or json")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *configPath == "" {
		fmt.Fprintln(stderr, "localgateway: -config is required")
		return 2
	}
	cfg, err := config.Load(*configPath)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	var logger *slog.Logger
	switch *logFormat {
	case "json":
		logger = slog.New(slog.NewJSONHandler(stderr, nil))
	case "text":
		logger = slog.New(slog.NewTextHandler(stderr, nil))
	default:
		fmt.Fprintf(stderr, "localgateway: -log-format must be text or json, got %q\n", *logFormat)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	wasm, err := os.ReadFile(*wasmPath)
	if err != nil {
		fmt.Fprintf(stderr, "localgateway: read the filter module: %v (build it with make wasm)\n", err)
		return 1
	}
	mod, err := host.Compile(ctx, wasm, nil)
	if err != nil {
		fmt.Fprintf(stderr, "localgateway: compile %s: %v\n", *wasmPath, err)
		return 1
	}
	ts, err := server.New(ctx, cfg, server.WithLogger(logger))
	if err != nil {
		fmt.Fprintf(stderr, "localgateway: token service: %v\n", err)
		return 1
	}
	defer ts.Close()
	gw, err := gateway.New(ctx, gateway.Options{
		Config:       cfg,
		Module:       mod,
		Workers:      *workers,
		TokenService: gateway.TokenService{Public: ts.PublicHandler(), Internal: ts.InternalHandler()},
		Logger:       logger,
	})
	if err != nil {
		fmt.Fprintf(stderr, "localgateway: %v\n", err)
		return 1
	}
	defer gw.Close()
	go ts.RunGC(ctx)
	logger.Info("local gateway listening", "addresses", gw.Addresses())
	if err := gw.ListenAndServe(ctx); err != nil {
		fmt.Fprintf(stderr, "localgateway: %v\n", err)
		return 1
	}
	return 0
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
