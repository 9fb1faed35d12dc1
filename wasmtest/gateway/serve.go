package gateway

import (
	"context"
	"crypto/tls"
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
	ls, err := Listen(ctx, g.Addresses())
	if err != nil {
		return err
	}
	return g.Serve(ctx, ls)
}

// Listen opens a listener on each address; a listen error names the address and closes the
// listeners already opened.
func Listen(ctx context.Context, addrs []string) ([]net.Listener, error) {
	var lc net.ListenConfig
	var ls []net.Listener
	for _, a := range addrs {
		l, err := lc.Listen(ctx, "tcp", a)
		if err != nil {
			for _, o := range ls {
				o.Close()
			}
			return nil, fmt.Errorf("listen on %s (a route's from or authenticate_service_url): %w", a, err)
		}
		ls = append(ls, l)
	}
	return ls, nil
}

// Serve serves on listeners the caller opened until ctx is done.
func (g *Gateway) Serve(ctx context.Context, ls []net.Listener) error {
	return serve(ctx, ls, g, g.timeouts, g.logger, g.listenerIsTLS, func() *tls.Certificate { return g.cert })
}

// serve serves h on ls until ctx is done, then shuts down gracefully (5 s). Listeners for
// which isTLS holds serve TLS with the certificate cert returns at each handshake.
func serve(ctx context.Context, ls []net.Listener, h http.Handler, t Timeouts, logger *slog.Logger,
	isTLS func(net.Listener) bool, cert func() *tls.Certificate) error {
	var wg sync.WaitGroup
	errs := make(chan error, len(ls))
	servers := make([]*http.Server, len(ls))
	for i, l := range ls {
		// No ReadTimeout or WriteTimeout: they would bound uploads and event streams. Bodies
		// are bounded per request (boundBody).
		srv := &http.Server{
			Handler: h, ReadHeaderTimeout: t.ReadHeader, IdleTimeout: t.Idle,
			MaxHeaderBytes: MaxHeaderBytes, ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		}
		servers[i] = srv
		secure := isTLS(l)
		if secure {
			srv.TLSConfig = tlsConfig(cert)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if secure {
				err = srv.ServeTLS(l, "", "")
			} else {
				err = srv.Serve(l)
			}
			if err != nil && !errors.Is(err, http.ErrServerClosed) {
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
