package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/tokensvc/assertion"
	"github.com/mcpmesh/gateway/tokensvc/check"
	"github.com/mcpmesh/gateway/tokensvc/hosts"
	"github.com/mcpmesh/gateway/tokensvc/idp"
	"github.com/mcpmesh/gateway/tokensvc/oauth"
	"github.com/mcpmesh/gateway/tokensvc/obs"
	"github.com/mcpmesh/gateway/tokensvc/reqid"
	"github.com/mcpmesh/gateway/tokensvc/secret"
	"github.com/mcpmesh/gateway/tokensvc/session"
	"github.com/mcpmesh/gateway/tokensvc/store"
	"github.com/mcpmesh/gateway/tokensvc/store/memory"
	"github.com/mcpmesh/gateway/tokensvc/store/postgres"
	"github.com/mcpmesh/gateway/tokensvc/store/sqlite"
	"github.com/mcpmesh/gateway/tokensvc/upstream"
	"go.opentelemetry.io/otel/trace"
)

// Defaults of the options.
const (
	DefaultGCInterval      = 5 * time.Minute
	DefaultShutdownTimeout = 10 * time.Second
	// DefaultHTTPTimeout bounds each request to the identity provider.
	DefaultHTTPTimeout = 10 * time.Second
)

// Server is the token service. Create it with New; it is safe for concurrent use.
type Server struct {
	cfg       *config.Config
	store     store.Store // rawStore instrumented
	rawStore  store.Store
	connector *obs.Connector
	metrics   *obs.Metrics
	tracer    trace.Tracer
	ownsStore bool
	hosts     *hosts.Table
	sessions  *session.Manager
	oauth     *oauth.Server
	signer    *assertion.Signer
	checker   *check.Checker
	upstream  *upstream.Service
	filterKey string
	now       func() time.Time
	log       *slog.Logger
	gcEvery   time.Duration

	public, internal http.Handler
	closeOnce        sync.Once
	closeErr         error
}

// Option configures New.
type Option func(*options)

type options struct {
	now        func() time.Time
	logger     *slog.Logger
	store      store.Store
	connector  idp.Connector
	gcInterval time.Duration
	metrics    *obs.Metrics
	tracer     trace.TracerProvider
	// upstreamHTTP is the client of upstream token endpoint calls (WithUpstreamHTTPClient).
	upstreamHTTP *http.Client
	// loopbackDiscovery is WithInsecureLoopbackDiscovery.
	loopbackDiscovery bool
}

// WithClock sets the clock of every component (default time.Now).
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// WithLogger sets the logger (default: slog.Default()). Records logged for a request get its
// request ID once (reqid.NewHandler).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithStore makes the server use st instead of opening cfg.Storage. The caller keeps
// ownership: Close does not close it.
func WithStore(st store.Store) Option { return func(o *options) { o.store = st } }

// WithConnector makes the server use c instead of the connector idp.New builds (tests).
func WithConnector(c idp.Connector) Option { return func(o *options) { o.connector = c } }

// WithMetrics makes the server record its metrics in m and serve them at paths.Metrics on
// the internal listener. Default: a new obs.Metrics of its own. Servers that replace one
// another (a reload) share one.
func WithMetrics(m *obs.Metrics) Option { return func(o *options) { o.metrics = m } }

// WithTracerProvider makes the server trace each request (continuing the caller's W3C
// trace context) and its identity provider and store calls with tp. Default: no tracing.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(o *options) { o.tracer = tp }
}

// WithUpstreamHTTPClient sets the client of calls to upstream OAuth token endpoints
// (default: bounded, no redirects; see package upstream). Tests use it to count calls.
func WithUpstreamHTTPClient(c *http.Client) Option { return func(o *options) { o.upstreamHTTP = c } }

// WithInsecureLoopbackDiscovery lets upstream_discovery routes discover, register and
// exchange tokens with servers on loopback addresses, over plain http too: the local
// gateway's -insecure-loopback-upstream-discovery flag and end-to-end tests. Off by default
// and never a configuration key (docs/upstream-discovery.md).
func WithInsecureLoopbackDiscovery() Option { return func(o *options) { o.loopbackDiscovery = true } }

// WithGCInterval sets how often expired records are deleted (default DefaultGCInterval).
func WithGCInterval(d time.Duration) Option { return func(o *options) { o.gcInterval = d } }

// New builds the token service for a validated cfg. It opens the configured store unless
// WithStore is given; Close releases it.
func New(ctx context.Context, cfg *config.Config, opts ...Option) (*Server, error) {
	o := options{now: time.Now, gcInterval: DefaultGCInterval}
	for _, opt := range opts {
		opt(&o)
	}
	if o.logger == nil {
		o.logger = slog.Default()
	}
	log := slog.New(reqid.NewHandler(o.logger.Handler()))
	if o.metrics == nil {
		o.metrics = obs.NewMetrics()
	}
	s := &Server{cfg: cfg, hosts: hosts.NewTable(cfg), filterKey: cfg.FilterKey(), now: o.now, log: log, gcEvery: o.gcInterval,
		metrics: o.metrics, tracer: obs.Tracer(o.tracer)}
	s.rawStore, s.ownsStore = o.store, false
	if s.rawStore == nil {
		st, err := OpenStore(ctx, cfg.Storage)
		if err != nil {
			return nil, err
		}
		s.rawStore, s.ownsStore = st, true
	}
	is := obs.InstrumentStore(s.rawStore, s.metrics, s.tracer)
	s.store = is
	if is.CanCountSessions() {
		s.metrics.SetSessionCounter(is, o.now)
	}
	if err := s.build(ctx, o); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Server) build(ctx context.Context, o options) error {
	conn := o.connector
	if conn == nil {
		c, err := idp.New(ctx, s.cfg, &http.Client{Timeout: DefaultHTTPTimeout}, idp.WithClock(o.now), idp.WithLogger(s.log))
		if err != nil {
			return fmt.Errorf("identity provider: %w", err)
		}
		conn = c
	}
	s.connector = obs.InstrumentConnector(conn, s.metrics, s.tracer)
	sm, err := session.New(s.cfg, s.store, s.connector, s.hosts, session.WithClock(o.now), session.WithLogger(s.log))
	if err != nil {
		return err
	}
	s.sessions = sm
	sealer, err := secret.NewSealer(s.cfg.DeriveKey("seal"))
	if err != nil {
		return err
	}
	upOpts := []upstream.Option{upstream.WithClock(o.now), upstream.WithLogger(s.log), upstream.WithEvents(s.metrics.UpstreamEvents())}
	if o.upstreamHTTP != nil {
		upOpts = append(upOpts, upstream.WithHTTPClient(o.upstreamHTTP))
	}
	if o.loopbackDiscovery {
		s.log.Warn("upstream discovery may reach loopback addresses over plain http (insecure loopback discovery is on: development and tests only)")
		upOpts = append(upOpts, upstream.WithInsecureLoopbackDiscovery())
	}
	s.upstream = upstream.New(s.cfg, s.store, sealer, sm, upOpts...)
	s.oauth = oauth.New(s.cfg, s.store, sm, oauth.WithClock(o.now), oauth.WithLogger(s.log), oauth.WithEvents(s.metrics.OAuthEvents()),
		oauth.WithUpstream(s.upstream))
	if s.signer, err = assertion.New(s.cfg, assertion.WithClock(o.now)); err != nil {
		return err
	}
	s.checker = check.New(s.cfg, s.store, s.oauth, s.upstream, s.signer, o.now)
	s.public = s.publicRoutes()
	s.internal = s.internalRoutes()
	return nil
}

// OpenStore opens the configured backend (what New does without WithStore; the local gateway
// opens it itself so that a reload can keep it).
func OpenStore(ctx context.Context, c config.Storage) (store.Store, error) {
	switch c.Type {
	case "memory":
		return memory.New(), nil
	case "sqlite", "":
		st, err := sqlite.New(ctx, c.Path)
		if err != nil {
			return nil, fmt.Errorf("storage: open sqlite %s: %w", c.Path, err)
		}
		return st, nil
	case "postgres":
		st, err := postgres.New(ctx, c.DSN)
		if err != nil {
			return nil, fmt.Errorf("storage: open postgres: %w", err)
		}
		return st, nil
	}
	return nil, fmt.Errorf("storage.type: unknown backend %q", c.Type)
}

// Store returns the server's store as it was given or opened (not instrumented).
func (s *Server) Store() store.Store { return s.rawStore }

// Config returns the configuration the server was built for.
func (s *Server) Config() *config.Config { return s.cfg }

// Metrics returns the metrics the server records.
func (s *Server) Metrics() *obs.Metrics { return s.metrics }

// Upstream returns the upstream OAuth service (connect flow and Internal Tokens).
func (s *Server) Upstream() *upstream.Service { return s.upstream }

// OAuth returns the authorization server.
func (s *Server) OAuth() *oauth.Server { return s.oauth }

// PublicHandler serves the gateway paths on configured hosts (see the package doc).
func (s *Server) PublicHandler() http.Handler { return s.public }

// InternalHandler serves the check API and the health probe.
func (s *Server) InternalHandler() http.Handler { return s.internal }

// RunGC deletes expired records every GC interval until ctx is done.
func (s *Server) RunGC(ctx context.Context) {
	t := time.NewTicker(s.gcEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.collect(ctx)
		}
	}
}

func (s *Server) collect(ctx context.Context) {
	n, err := s.store.DeleteExpired(ctx, s.now())
	switch {
	case err != nil && ctx.Err() == nil:
		s.log.ErrorContext(ctx, "delete expired records", "error", err.Error())
	case n > 0:
		s.log.DebugContext(ctx, "deleted expired records", "rows", n)
	}
}

// ListenAndServe serves the public handler on cfg.TokenService.Address and the internal
// handler on cfg.TokenService.InternalAddress, and runs the GC loop, until ctx is done; then
// it shuts both listeners down gracefully. It does not close the store (Close does).
func (s *Server) ListenAndServe(ctx context.Context) error {
	var lc net.ListenConfig
	pub, err := lc.Listen(ctx, "tcp", s.cfg.TokenService.Address)
	if err != nil {
		return fmt.Errorf("token_service.address: listen: %w", err)
	}
	in, err := lc.Listen(ctx, "tcp", s.cfg.TokenService.InternalAddress)
	if err != nil {
		pub.Close()
		return fmt.Errorf("token_service.internal_address: listen: %w", err)
	}
	return s.Serve(ctx, pub, in)
}

// Serve is ListenAndServe on listeners the caller opened.
func (s *Server) Serve(ctx context.Context, public, internal net.Listener) error {
	return NewCurrent(s).Serve(ctx, public, internal)
}

func (s *Server) httpServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
}

// Close releases the store if New opened it. It is safe to call more than once.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		if s.ownsStore && s.rawStore != nil {
			s.closeErr = s.rawStore.Close()
		}
	})
	return s.closeErr
}

// Current holds the Server that answers requests and lets it be replaced while serving
// (Swap): requests that start after a swap are answered by the new server, requests in
// flight finish on the one they started on. It is safe for concurrent use.
type Current struct {
	p                atomic.Pointer[Server]
	public, internal http.Handler
}

// NewCurrent returns a Current holding s.
func NewCurrent(s *Server) *Current {
	c := &Current{}
	c.p.Store(s)
	c.public = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { c.p.Load().public.ServeHTTP(w, r) })
	c.internal = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { c.p.Load().internal.ServeHTTP(w, r) })
	return c
}

// Load returns the server answering now.
func (c *Current) Load() *Server { return c.p.Load() }

// Swap makes s answer from now on and returns the server it replaces. The caller closes
// the old server once it no longer needs its store (see WithStore).
func (c *Current) Swap(s *Server) *Server { return c.p.Swap(s) }

// PublicHandler serves with the current server's public handler.
func (c *Current) PublicHandler() http.Handler { return c.public }

// InternalHandler serves with the current server's internal handler.
func (c *Current) InternalHandler() http.Handler { return c.internal }

// Serve is Server.Serve for whichever server is current: each request is answered by the
// server current when it arrives, and the GC loop runs on the current server's store.
func (c *Current) Serve(ctx context.Context, public, internal net.Listener) error {
	first := c.Load()
	servers := []*http.Server{first.httpServer(c.public), first.httpServer(c.internal)}
	listeners := []net.Listener{public, internal}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, len(servers))
	for i := range servers {
		go func() {
			err := servers[i].Serve(listeners[i])
			if errors.Is(err, http.ErrServerClosed) {
				err = nil
			}
			errs <- err
			cancel()
		}()
	}
	gcDone := make(chan struct{})
	go func() { defer close(gcDone); c.runGC(ctx) }()
	first.log.Info("token service listening", "public", public.Addr().String(), "internal", internal.Addr().String())
	<-ctx.Done()
	shutdownCtx, stop := context.WithTimeout(context.WithoutCancel(ctx), DefaultShutdownTimeout)
	defer stop()
	var firstErr error
	for _, srv := range servers {
		if err := srv.Shutdown(shutdownCtx); err != nil && firstErr == nil {
			firstErr = fmt.Errorf("shut down: %w", err)
		}
	}
	for range servers {
		if err := <-errs; err != nil && firstErr == nil {
			firstErr = err
		}
	}
	<-gcDone
	return firstErr
}

// runGC is RunGC on whichever server is current at each tick.
func (c *Current) runGC(ctx context.Context) {
	t := time.NewTicker(c.Load().gcEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			c.Load().collect(ctx)
		}
	}
}
