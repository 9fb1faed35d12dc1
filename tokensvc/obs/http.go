package obs

import (
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Unmatched is the endpoint label of every 404 and 421 answer (no route matched, unknown
// host): the raw path is never a label, so a client cannot create series.
const Unmatched = "unmatched"

// HTTP returns the middleware of one listener ("public" or "internal"): it extracts the
// W3C trace context (traceparent) of the request, runs it in a server span (with a
// tracer), and counts and times it by endpoint, the chi route pattern matched (Unmatched
// for 404 and 421 answers). Install it first on the listener's outermost chi router, so the pattern is
// read after every nested router has routed. m and tracer may be nil.
func HTTP(listener string, m *Metrics, tracer trace.Tracer) func(http.Handler) http.Handler {
	prop := propagation.TraceContext{}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			ctx := r.Context()
			var span trace.Span
			if tracer != nil {
				ctx = prop.Extract(ctx, propagation.HeaderCarrier(r.Header))
				ctx, span = tracer.Start(ctx, r.Method, trace.WithSpanKind(trace.SpanKindServer),
					trace.WithAttributes(attribute.String("http.request.method", r.Method), attribute.String("tokensvc.listener", listener)))
				r = r.WithContext(ctx)
			}
			ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
			next.ServeHTTP(ww, r)
			status := ww.Status()
			if status == 0 {
				status = http.StatusOK
			}
			endpoint := Unmatched
			if rc := chi.RouteContext(r.Context()); rc != nil {
				if p := rc.RoutePattern(); p != "" && status != http.StatusNotFound && status != http.StatusMisdirectedRequest {
					endpoint = p
				}
			}
			method := normalMethod(r.Method)
			if m != nil {
				m.httpRequests.WithLabelValues(listener, method, endpoint, statusText(status)).Inc()
				m.httpDuration.WithLabelValues(listener, method, endpoint).Observe(time.Since(start).Seconds())
			}
			if span != nil {
				span.SetName(method + " " + endpoint)
				span.SetAttributes(attribute.String("http.route", endpoint), attribute.Int("http.response.status_code", status))
				if status >= 500 {
					span.SetStatus(codes.Error, http.StatusText(status))
				}
				span.End()
			}
		})
	}
}

// normalMethod bounds the method label.
func normalMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "OTHER"
}

func statusText(code int) string {
	const digits = "0123456789"
	if code < 100 || code > 999 {
		return "other"
	}
	return string([]byte{digits[code/100], digits[code/10%10], digits[code%10]})
}
