// Command tokensvc runs the token service: the OAuth 2.1 authorization server for MCP
// clients, browser sign-in at the identity provider, the route listing, the identity
// assertion JWKS and, on a separate internal listener, the check API the filter calls.
//
// Usage:
//
//	tokensvc -config FILE [-log-format json|text] [-log-level info]
//
// A configuration error is printed with the key it concerns and exits with status 2. The
// service runs until SIGINT or SIGTERM, then shuts its listeners down gracefully.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/tokensvc/server"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stderr))
}

// run is main without the process: it returns the exit status.
func run(ctx context.Context, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("tokensvc", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "gateway configuration `file` (required)")
	logFormat := fs.String("log-format", "json", "log format: json or text")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		return 2
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
	srv, err := server.New(ctx, cfg, server.WithLogger(logger))
	if err != nil {
		logger.Error("start token service", "error", err.Error())
		return 1
	}
	defer srv.Close()
	if err := srv.ListenAndServe(ctx); err != nil && !errors.Is(err, context.Canceled) {
		logger.Error("token service stopped", "error", err.Error())
		return 1
	}
	logger.Info("token service stopped")
	return 0
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
