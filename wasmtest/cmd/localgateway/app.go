package main

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/tokensvc/server"
	"github.com/mcpmesh/gateway/tokensvc/store"
	"github.com/mcpmesh/gateway/wasmtest/gateway"
	"github.com/mcpmesh/gateway/wasmtest/host"
)

// app is the running local gateway: one configuration at a time (an instance) behind the
// listeners of a gateway.Live, replaced by reload.
type app struct {
	path      string
	module    *host.Module
	workers   int
	logger    *slog.Logger
	wasmLevel host.LogLevel
	grace     time.Duration
	// hostOptions, if set, adjusts the wasm host options after the log level (tests).
	hostOptions func(*host.Options)
	// serverOptions are added to the in-process token service's (flags such as
	// -insecure-loopback-upstream-discovery).
	serverOptions []server.Option

	// remote, if set, is the token service as separate processes (-token-service-public and
	// -token-service-internal): no token service or store runs in the gateway.
	remote *gateway.TokenService

	live *gateway.Live
	mu   sync.Mutex // serializes reloads; guards cur
	cur  *instance
}

// instance is one configuration's token service and gateway. The store is shared by the
// instances of the same storage settings.
type instance struct {
	cfg    *config.Config
	st     *sharedStore
	ts     *server.Server
	gw     *gateway.Gateway
	stopGC context.CancelFunc
}

// sharedStore is a store and the number of instances using it; the last one closes it.
type sharedStore struct {
	store.Store
	users int // guarded by app.mu
}

// start builds the first instance from cfg.
// capturedLogLines is how many filter log lines the command's host keeps in memory (for
// WaitLog); they are written to the logger as they come, so the capture is only a window.
// The host's default (100,000) would hold tens of MB at info level in a long run.
const capturedLogLines = 1000

func (a *app) start(ctx context.Context, cfg *config.Config) error {
	if a.remote != nil {
		return a.startRemote(ctx, cfg)
	}
	st, err := server.OpenStore(ctx, cfg.Storage)
	if err != nil {
		return fmt.Errorf("token service: %w", err)
	}
	ss := &sharedStore{Store: st}
	in, err := a.build(ctx, cfg, ss)
	if err != nil {
		_ = st.Close()
		return err
	}
	a.cur, a.live = in, gateway.NewLive(in.gw, a.grace)
	return nil
}

// build starts a token service and a gateway for cfg on the store ss.
func (a *app) build(ctx context.Context, cfg *config.Config, ss *sharedStore) (*instance, error) {
	if a.remote != nil {
		return a.buildRemote(ctx, cfg, ss)
	}
	ts, err := server.New(ctx, cfg, append([]server.Option{server.WithLogger(a.logger), server.WithStore(ss.Store)}, a.serverOptions...)...)
	if err != nil {
		return nil, fmt.Errorf("token service: %w", err)
	}
	gw, err := gateway.New(ctx, gateway.Options{
		Config:       cfg,
		Module:       a.module,
		Workers:      a.workers,
		TokenService: gateway.TokenService{Public: ts.PublicHandler(), Internal: ts.InternalHandler()},
		Logger:       a.logger,
		HostOptions: func(o *host.Options) {
			o.LogLevel = a.wasmLevel
			o.MaxLogEntries = capturedLogLines
			if a.hostOptions != nil {
				a.hostOptions(o)
			}
		},
	})
	if err != nil {
		_ = ts.Close()
		return nil, err
	}
	gcCtx, stopGC := context.WithCancel(context.WithoutCancel(ctx))
	go ts.RunGC(gcCtx)
	ss.users++
	return &instance{cfg: cfg, st: ss, ts: ts, gw: gw, stopGC: stopGC}, nil
}

// reload re-reads the configuration file and, if it is valid and listens on the same
// addresses, swaps in a new token service and gateway; otherwise the running configuration
// stays. It logs which happened.
func (a *app) reload(ctx context.Context) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	fail := func(err error) error {
		a.logger.Error("configuration reload failed; keeping the running configuration", "config", a.path, "error", err)
		return err
	}
	cfg, err := config.Load(a.path)
	if err != nil {
		return fail(err)
	}
	ss := a.cur.st
	if cfg.Storage != a.cur.cfg.Storage && a.remote == nil {
		st, err := server.OpenStore(ctx, cfg.Storage)
		if err != nil {
			return fail(fmt.Errorf("token service: %w", err))
		}
		ss = &sharedStore{Store: st}
	}
	in, err := a.build(ctx, cfg, ss)
	if err == nil {
		old := a.cur
		if err = a.live.Swap(in.gw, func(*gateway.Gateway) { a.retire(old) }); err != nil {
			in.stopGC()
			_ = in.gw.Close()
			_ = in.ts.Close()
			ss.users--
		} else {
			a.cur = in
		}
	}
	if err != nil {
		if ss.users == 0 {
			_ = ss.Close()
		}
		return fail(err)
	}
	a.logger.Info("configuration reloaded", "config", a.path, "addresses", in.gw.Addresses(), "routes", len(cfg.Routes))
	return nil
}

// retire closes an instance, and its store when no other instance uses it.
func (a *app) retire(in *instance) {
	in.stopGC()
	_ = in.gw.Close()
	if in.ts != nil {
		_ = in.ts.Close()
	}
	a.mu.Lock()
	in.st.users--
	last := in.st.users == 0
	a.mu.Unlock()
	if last && in.st.Store != nil {
		_ = in.st.Close()
	}
}

// close waits for the retirements under way and closes the current instance.
func (a *app) close() {
	a.live.Wait()
	a.mu.Lock()
	in := a.cur
	a.mu.Unlock()
	a.retire(in)
}
