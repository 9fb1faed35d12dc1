package server

import (
	"context"
	"net/http"
	"time"
)

// publicDeadline bounds the work of one request on the public listener: store operations
// and identity-provider calls made for it are cancelled past it, so that a database that
// accepts connections and never answers costs a client 10 s and a 503, not a hung request.
// It is below Envoy's default route timeout (15 s), so the client gets the token service's
// answer rather than the proxy's 504.
const publicDeadline = 10 * time.Second

// withDeadline gives each request's context a deadline of d (none when d <= 0).
func withDeadline(d time.Duration) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if d <= 0 {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx, cancel := context.WithTimeout(r.Context(), d)
			defer cancel()
			next.ServeHTTP(w, r.WithContext(ctx))
		})
	}
}

// checkDeadline is the deadline of a check request: the filter stops waiting after
// token_service.check_timeout and fails closed, so work past it (a hung store) only holds
// resources. A second of slack covers the trip.
func (s *Server) checkDeadline() time.Duration {
	return s.cfg.TokenService.CheckTimeout.D() + time.Second
}
