package reqid

import (
	"context"
	"crypto/rand"
	"log/slog"
	"net/http"
)

// Header carries the request ID in both directions.
const Header = "X-Request-Id"

// LogKey is the attribute under which NewHandler logs the request ID.
const LogKey = "request_id"

// maxLen is the longest incoming ID that is reused.
const maxLen = 64

type ctxKey struct{}

// FromContext returns the request ID of ctx, or "" when Middleware did not run.
func FromContext(ctx context.Context) string {
	id, _ := ctx.Value(ctxKey{}).(string)
	return id
}

// NewContext returns ctx carrying id (for embedding programs and tests; handlers get theirs
// from Middleware).
func NewContext(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, ctxKey{}, id)
}

// Middleware gives every request its ID (see the package doc).
func Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := FromContext(r.Context())
		if id == "" {
			id = r.Header.Get(Header)
			if !Valid(id) {
				id = rand.Text()
			}
			r = r.WithContext(NewContext(r.Context(), id))
		}
		w.Header().Set(Header, id)
		// Code that reads the header itself must see the ID chosen here, never a value the
		// client made up.
		r.Header.Set(Header, id)
		next.ServeHTTP(w, r)
	})
}

// Valid reports whether id may be reused as a request ID: 1–64 characters of
// [A-Za-z0-9._-].
func Valid(id string) bool {
	if id == "" || len(id) > maxLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// handler adds the request ID of the record's context to every record.
type handler struct{ slog.Handler }

// NewHandler returns h adding LogKey with the request ID of each record's context. Wrapping
// a handler NewHandler returned gives it back unchanged, so records never carry the ID twice.
func NewHandler(h slog.Handler) slog.Handler {
	if _, ok := h.(handler); ok {
		return h
	}
	return handler{h}
}

func (h handler) Handle(ctx context.Context, r slog.Record) error {
	if id := FromContext(ctx); id != "" {
		r.AddAttrs(slog.String(LogKey, id))
	}
	return h.Handler.Handle(ctx, r)
}

func (h handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return handler{h.Handler.WithAttrs(attrs)}
}

func (h handler) WithGroup(name string) slog.Handler {
	return handler{h.Handler.WithGroup(name)}
}
