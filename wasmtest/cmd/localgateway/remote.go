package main

import (
	"context"
	"errors"
	"flag"
	"log/slog"
	"strings"

	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/wasmtest/gateway"
	"github.com/mcpmesh/gateway/wasmtest/host"
)

// remoteFlags are -token-service-public and -token-service-internal: the token service as
// separate processes (replicas on one PostgreSQL), as Envoy reaches it, instead of the
// in-process one.
type remoteFlags struct {
	public, internal *string
}

func addRemoteFlags(fs *flag.FlagSet) remoteFlags {
	return remoteFlags{
		public:   fs.String("token-service-public", "", "comma-separated base URLs (http://host:port) of the token service replicas' public listeners; with -token-service-internal, no token service or store runs in the gateway"),
		internal: fs.String("token-service-internal", "", "comma-separated base URLs of the replicas' internal listeners (the check API)"),
	}
}

// tokenService returns the remote token service the flags name, or nil when neither is set.
func (f remoteFlags) tokenService(logger *slog.Logger) (*gateway.TokenService, error) {
	pub, in := splitURLs(*f.public), splitURLs(*f.internal)
	if len(pub) == 0 && len(in) == 0 {
		return nil, nil
	}
	if len(pub) == 0 || len(in) == 0 {
		return nil, errors.New("-token-service-public and -token-service-internal go together")
	}
	ts, err := gateway.RemoteTokenService(pub, in, logger)
	if err != nil {
		return nil, err
	}
	return &ts, nil
}

func splitURLs(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// startRemote builds the first instance on the remote token service.
func (a *app) startRemote(ctx context.Context, cfg *config.Config) error {
	in, err := a.buildRemote(ctx, cfg, &sharedStore{})
	if err != nil {
		return err
	}
	a.cur, a.live = in, gateway.NewLive(in.gw, a.grace)
	return nil
}

// buildRemote starts a gateway for cfg whose gateway paths and check calls go to the remote
// token service; ss holds no store.
func (a *app) buildRemote(ctx context.Context, cfg *config.Config, ss *sharedStore) (*instance, error) {
	gw, err := gateway.New(ctx, gateway.Options{
		Config:       cfg,
		Module:       a.module,
		Workers:      a.workers,
		TokenService: *a.remote,
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
		return nil, err
	}
	ss.users++
	return &instance{cfg: cfg, st: ss, gw: gw, stopGC: func() {}}, nil
}
