package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// ListenAndServe listens on every address of Addresses and serves until ctx is done, then
// shuts down gracefully. A listen error names the address (and so the route it came from).
func (g *Gateway) ListenAndServe(ctx context.Context) error {
	var lc net.ListenConfig
	var ls []net.Listener
	for _, a := range g.Addresses() {
		l, err := lc.Listen(ctx, "tcp", a)
		if err != nil {
			for _, o := range ls {
				o.Close()
			}
			return fmt.Errorf("listen on %s (a route's from or authenticate_service_url): %w", a, err)
		}
		ls = append(ls, l)
	}
	return g.Serve(ctx, ls)
}

// Serve serves on listeners the caller opened until ctx is done.
func (g *Gateway) Serve(ctx context.Context, ls []net.Listener) error {
	var wg sync.WaitGroup
	errs := make(chan error, len(ls))
	servers := make([]*http.Server, len(ls))
	for i, l := range ls {
		// No ReadTimeout or WriteTimeout: they would bound uploads and event streams. Bodies
		// are bounded per request (boundBody).
		srv := &http.Server{
			Handler: g, ReadHeaderTimeout: g.timeouts.ReadHeader, IdleTimeout: g.timeouts.Idle,
			MaxHeaderBytes: MaxHeaderBytes, ErrorLog: slog.NewLogLogger(g.logger.Handler(), slog.LevelWarn),
		}
		servers[i] = srv
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errs <- err
			}
		}()
	}
	var err error
	select {
	case <-ctx.Done():
	case err = <-errs:
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, s := range servers {
		_ = s.Shutdown(shutdown)
	}
	wg.Wait()
	return err
}
