// Command tokensvc runs the token service: the OAuth 2.1 authorization server for MCP
// clients, browser sign-in at the identity provider, the route listing, the identity
// assertion JWKS and, on a separate internal listener, the check API the filter calls, the
// readiness probe and the Prometheus metrics.
//
// Usage:
//
//	tokensvc -config FILE [-log-format json|text] [-log-level info]
//	tokensvc -check-config FILE
//
// A configuration error is printed with the key it concerns and exits with status 2;
// -check-config validates FILE the same way and exits 0 when it is valid. The service runs
// until SIGINT or SIGTERM, then shuts its listeners down gracefully.
//
// SIGHUP reloads the configuration file: when it is valid, a new server is built and swapped
// in behind the listeners (requests in flight finish on the old one; the store is kept, so
// changing storage or the listener addresses is refused and needs a restart); otherwise the
// running configuration keeps serving. Either way one log line says what happened.
//
// Tracing is off unless the OTEL_* environment asks for it (see package obs).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/tokensvc/obs"
	"github.com/mcpmesh/gateway/tokensvc/server"
)

func main() {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	os.Exit(runWith(context.Background(), os.Args[1:], os.Stderr, hup))
}

// run is main without the process and without reloads: it returns the exit status.
func run(ctx context.Context, args []string, stderr io.Writer) int {
	return runWith(ctx, args, stderr, nil)
}

// runWith is run where each value received from reload reloads the configuration.
func runWith(ctx context.Context, args []string, stderr io.Writer, reload <-chan os.Signal) int {
	fs := flag.NewFlagSet("tokensvc", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "gateway configuration `file` (required)")
	checkPath := fs.String("check-config", "", "validate the configuration `file` and exit: 0 when valid, 2 otherwise")
	logFormat := fs.String("log-format", "json", "log format: json or text")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *checkPath != "" {
		if _, err := config.Load(*checkPath); err != nil {
			fmt.Fprintln(stderr, err)
			return 2
		}
		fmt.Fprintf(stderr, "tokensvc: %s: configuration is valid\n", *checkPath)
		return 0
	}
	if *configPath == "" {
		fmt.Fprintln(stderr, "tokensvc: -config is required")
		fs.Usage()
		return 2
	}
	logger, err := newLogger(stderr, *logFormat, *logLevel)
	if err != nil {
		fmt.Fprintln(stderr, "tokensvc:", err)
		return 2
	}
	cfg, err := config.Load(*configPath)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	tp, err := obs.NewTracerProvider(ctx, os.LookupEnv)
	if err != nil {
		fmt.Fprintln(stderr, "tokensvc:", err)
		return 2
	}
	opts := []server.Option{server.WithLogger(logger), server.WithMetrics(obs.NewMetrics())}
	if tp != nil {
		defer func() {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			_ = tp.Shutdown(sctx)
		}()
		opts = append(opts, server.WithTracerProvider(tp))
		logger.Info("tracing enabled (OTLP)")
	}
	for _, note := range cfg.Notes {
		logger.Info("configuration", "note", note)
	}
	srv, err := server.New(ctx, cfg, opts...)
	if err != nil {
		logger.Error("start token service", "error", err.Error())
		return exitStatus(err)
	}
	defer srv.Close() // srv owns the store every reloaded server shares
	cur := server.NewCurrent(srv)
	r := &reloader{path: *configPath, cur: cur, log: logger, opts: append(opts, server.WithStore(srv.Store()))}
	done := make(chan error, 1)
	go func() { done <- r.listenAndServe(ctx) }()
	for {
		select {
		case <-reload:
			r.reload(ctx)
		case err := <-done:
			if err != nil && !errors.Is(err, context.Canceled) {
				logger.Error("token service stopped", "error", err.Error())
				return 1
			}
			logger.Info("token service stopped")
			return 0
		}
	}
}

// exitStatus is 2 for a configuration error (config.Error, also when a part of the service
// found it at start-up), 1 for anything else.
func exitStatus(err error) int {
	var ce *config.Error
	if errors.As(err, &ce) {
		return 2
	}
	return 1
}

// reloader rebuilds the server from the configuration file.
type reloader struct {
	path string
	cur  *server.Current
	log  *slog.Logger
	opts []server.Option // the first server's options, with its store
}

func (r *reloader) listenAndServe(ctx context.Context) error {
	cfg := r.cur.Load().Config()
	var lc net.ListenConfig
	pub, err := lc.Listen(ctx, "tcp", cfg.TokenService.Address)
	if err != nil {
		return fmt.Errorf("token_service.address: listen: %w", err)
	}
	in, err := lc.Listen(ctx, "tcp", cfg.TokenService.InternalAddress)
	if err != nil {
		pub.Close()
		return fmt.Errorf("token_service.internal_address: listen: %w", err)
	}
	return r.cur.Serve(ctx, pub, in)
}

// reload loads and validates the file again and swaps in a server built from it, or keeps
// the running one; it logs one line saying which.
func (r *reloader) reload(ctx context.Context) {
	cfg, err := config.Load(r.path)
	if err != nil {
		r.log.Error("configuration reload refused; keeping the running configuration", "file", r.path, "error", err.Error())
		return
	}
	old := r.cur.Load().Config()
	switch {
	case cfg.Storage != old.Storage:
		r.log.Error("configuration reload refused; keeping the running configuration", "file", r.path,
			"error", "storage: the settings changed; restart the token service to change them")
		return
	case cfg.TokenService.Address != old.TokenService.Address || cfg.TokenService.InternalAddress != old.TokenService.InternalAddress:
		r.log.Error("configuration reload refused; keeping the running configuration", "file", r.path,
			"error", "token_service.address, token_service.internal_address: the listeners changed; restart the token service to change them")
		return
	}
	srv, err := server.New(ctx, cfg, r.opts...)
	if err != nil {
		r.log.Error("configuration reload refused; keeping the running configuration", "file", r.path, "error", err.Error())
		return
	}
	// Warm up (discovery at the identity provider) so readiness does not flip on the swap.
	wctx, cancel := context.WithTimeout(ctx, server.ReadyTimeout)
	notReady := srv.Ready(wctx)
	cancel()
	r.cur.Swap(srv) // the old server shares the store: nothing to close
	r.log.Info("configuration reloaded", "file", r.path, "routes", len(cfg.Routes), "not_ready", notReady)
}

func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("-log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: lvl}
	switch format {
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("-log-format: want json or text, got %q", format)
}
