package server

import (
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/go-chi/chi/v5/middleware"
)

// logRequests logs one line per request: method, host, path (never the query, which may
// carry codes or states), status, size and duration. Headers and cookies are never logged.
func (s *Server) logRequests(listener string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
			next.ServeHTTP(ww, r)
			status := ww.Status()
			if status == 0 {
				status = http.StatusOK
			}
			level := slog.LevelInfo
			if status >= 500 {
				level = slog.LevelError
			}
			s.log.Log(r.Context(), level, "http request",
				"listener", listener, "method", r.Method, "host", r.Host, "path", r.URL.Path,
				"status", status, "bytes", ww.BytesWritten(), "duration_ms", time.Since(start).Milliseconds())
		})
	}
}

// recoverer turns a handler panic into a 500 and a log record with the stack.
func (s *Server) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			rec := recover()
			if rec == nil {
				return
			}
			if rec == http.ErrAbortHandler {
				panic(rec)
			}
			s.log.ErrorContext(r.Context(), "handler panic", "panic", panicType(rec), "stack", string(debug.Stack()))
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte(`{"error":"server_error"}` + "\n"))
		}()
		next.ServeHTTP(w, r)
	})
}

// panicType describes a panic value without printing it (it might hold a secret).
func panicType(v any) string {
	if err, ok := v.(error); ok {
		return "error: " + err.Error()
	}
	if s, ok := v.(string); ok {
		return s
	}
	return "non-error panic value"
}

// securityHeaders sets defaults every response gets; handlers may override them (pages set
// their own Content-Security-Policy, the JWKS its Cache-Control).
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		h.Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'; base-uri 'none'")
		next.ServeHTTP(w, r)
	})
}

// maxBody bounds request bodies.
func maxBody(n int64) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.ContentLength > n {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusRequestEntityTooLarge)
				_, _ = w.Write([]byte(`{"error":"invalid_request","error_description":"request body too large"}` + "\n"))
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, n)
			next.ServeHTTP(w, r)
		})
	}
}
