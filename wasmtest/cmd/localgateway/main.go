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
//
// The filter's authorization records are printed as themselves: with -log-format json each
// is its own JSON line on stderr, as the filter wrote it; with text, its fields are the
// attributes of an "authorize check" line (gateway.RecordHandler). -wasm-log-level sets the
// proxy log level the filter runs under (default info, Envoy's). -admin host:port (default
// off) serves GET /metrics, the filter's counters in the Prometheus text format named
// envoy_wasmcustom_<name>. SIGHUP re-reads the configuration file: a valid one replaces the
// token service and the filter's plugin configuration behind the same listeners (requests in
// flight finish on the old ones; see gateway.Live), a file that fails to load or that would
// change the listen addresses keeps the running configuration. Either way a log line says
// which happened. See docs/operations.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/tokensvc/server"
	"github.com/mcpmesh/gateway/wasmtest/gateway"
	"github.com/mcpmesh/gateway/wasmtest/host"
)

func main() { os.Exit(run(os.Args[1:], os.Stderr)) }

// wasmLogLevels are the values of -wasm-log-level.
var wasmLogLevels = map[string]host.LogLevel{
	"trace": host.LogTrace, "debug": host.LogDebug, "info": host.LogInfo, "warn": host.LogWarn, "error": host.LogError,
}

func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("localgateway", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "gateway configuration file (required)")
	wasmPath := fs.String("wasm", envOr("GATEWAY_WASM", "build/out/filter.wasm"), "filter.wasm to run (make wasm builds it)")
	workers := fs.Int("workers", 2, "filter VMs (Envoy worker threads)")
	logFormat := fs.String("log-format", "text", "log format: text or json")
	wasmLevel := fs.String("wasm-log-level", "info", "proxy log level of the filter: trace, debug, info, warn or error")
	admin := fs.String("admin", "", "admin address serving GET /metrics (Prometheus), e.g. 127.0.0.1:9901; empty: off")
	grace := fs.Duration("reload-grace", gateway.DefaultGrace, "after a reload, how long requests in flight may finish on the old configuration")
	printURLs := fs.Bool("print-urls", false, "print the configuration's public URLs (one per line: kind, name, URL) and exit")
	printAddrs := fs.Bool("print-addresses", false, "print the host:port addresses the gateway listens on and exit")
	devCA := fs.String("dev-ca", "", "make (or reuse) a development CA in this directory and issue a certificate for the configuration's https hosts (or localhost), then exit; see docs/clients.md#tls")
	loopbackDiscovery := fs.Bool("insecure-loopback-upstream-discovery", false, "let upstream_discovery routes reach loopback addresses, over plain http too (development and tests only; docs/upstream-discovery.md)")
	remote := addRemoteFlags(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *devCA != "" {
		return runDevCA(*devCA, *configPath, stderr)
	}
	if *configPath == "" {
		fmt.Fprintln(stderr, "localgateway: -config is required")
		return 2
	}
	level, ok := wasmLogLevels[*wasmLevel]
	if !ok {
		fmt.Fprintf(stderr, "localgateway: -wasm-log-level must be trace, debug, info, warn or error, got %q\n", *wasmLevel)
		return 2
	}
	cfg, err := config.Load(*configPath)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	if *printURLs || *printAddrs {
		printConfig(cfg, *printURLs, *printAddrs)
		return 0
	}
	logger, err := newLogger(*logFormat, level, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "localgateway: %v\n", err)
		return 2
	}
	remoteTS, err := remote.tokenService(logger)
	if err != nil {
		fmt.Fprintf(stderr, "localgateway: %v\n", err)
		return 2
	}
	if err := checkCertificate(cfg); err != nil {
		fmt.Fprintf(stderr, "localgateway: %v\n", err)
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
	for _, note := range cfg.Notes {
		logger.Info("configuration", "note", note)
	}
	a := &app{path: *configPath, module: mod, workers: *workers, logger: logger, wasmLevel: level, grace: *grace}
	if *loopbackDiscovery {
		a.serverOptions = append(a.serverOptions, server.WithInsecureLoopbackDiscovery())
	}
	a.remote = remoteTS
	if err := a.start(ctx, cfg); err != nil {
		fmt.Fprintf(stderr, "localgateway: %v\n", err)
		var ce *config.Error
		if errors.As(err, &ce) {
			return 2 // a configuration problem found at start-up (the identity provider's settings)
		}
		return 1
	}
	defer func() { stop(); a.close() }() // no reload starts once ctx is done

	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				if ctx.Err() == nil {
					_ = a.reload(ctx)
				}
			}
		}
	}()

	errs := make(chan error, 2)
	if *admin != "" {
		l, err := net.Listen("tcp", *admin)
		if err != nil {
			fmt.Fprintf(stderr, "localgateway: -admin: %v\n", err)
			return 1
		}
		srv := &http.Server{Handler: a.live.AdminHandler(), ReadHeaderTimeout: 10 * time.Second}
		go func() { <-ctx.Done(); _ = srv.Close() }()
		go func() {
			if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errs <- fmt.Errorf("admin: %w", err)
			}
		}()
		logger.Info("admin listening", "address", l.Addr().String(), "paths", []string{"/metrics"})
	}
	// Ready only once every listener is bound: a taken address fails here, naming it.
	ls, err := gateway.Listen(ctx, a.live.Current().Addresses())
	if err != nil {
		fmt.Fprintf(stderr, "localgateway: %v\n", err)
		return 1
	}
	logger.Info("local gateway ready", "addresses", a.live.Current().Addresses(), "urls", a.live.Current().URLs())
	go func() { errs <- a.live.Serve(ctx, ls) }()
	if err := <-errs; err != nil {
		fmt.Fprintf(stderr, "localgateway: %v\n", err)
		return 1
	}
	return 0
}

// newLogger builds the logger of format whose level lets the filter's lines at wasm level
// through (gateway.NewLogger).
func newLogger(format string, wasm host.LogLevel, w io.Writer) (*slog.Logger, error) {
	return gateway.NewLogger(format, wasm, w)
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
