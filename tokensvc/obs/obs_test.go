package obs

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus/testutil"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpmesh/gateway/tokensvc/idp"
	"github.com/mcpmesh/gateway/tokensvc/store"
	"github.com/mcpmesh/gateway/tokensvc/store/memory"
)

// failingStore answers GetClient with err.
type failingStore struct {
	*memory.Store
	err error
}

func (f failingStore) GetClient(context.Context, string, time.Time) (store.Client, error) {
	return store.Client{}, f.err
}

func TestStore_TimesEveryCallAndCountsOnlyFailures(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		err        error
		wantErrors float64
	}{
		{"success", nil, 0},
		{"not found is an answer", fmt.Errorf("get: %w", store.ErrNotFound), 0},
		{"already exists is an answer", store.ErrAlreadyExists, 0},
		{"reuse is an answer", store.ErrRefreshReused, 0},
		{"conflict is an answer", store.ErrConflict, 0},
		{"a backend failure", errors.New("connection reset"), 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := NewMetrics()
			s := InstrumentStore(failingStore{Store: memory.New(), err: tc.err}, m, nil)
			_, err := s.GetClient(context.Background(), "x", time.Now())
			if !errors.Is(err, tc.err) {
				t.Fatalf("err = %v, want %v passed through", err, tc.err)
			}
			if got := testutil.CollectAndCount(m.storeDuration, Namespace+"_store_operation_duration_seconds"); got != 1 {
				t.Errorf("%d duration series, want 1", got)
			}
			if got := testutil.ToFloat64(m.storeErrors.WithLabelValues("GetClient")); got != tc.wantErrors {
				t.Errorf("store_errors_total{method=GetClient} = %v, want %v", got, tc.wantErrors)
			}
		})
	}
}

// fakeConnector fails every call with err.
type fakeConnector struct{ err error }

func (f fakeConnector) AuthCodeURL(context.Context, string, string, string) (string, error) {
	return "u", f.err
}
func (f fakeConnector) Exchange(context.Context, string, string, string) (idp.Identity, idp.Tokens, error) {
	return idp.Identity{}, idp.Tokens{}, f.err
}
func (f fakeConnector) Refresh(context.Context, idp.Tokens) (idp.Identity, idp.Tokens, error) {
	return idp.Identity{}, idp.Tokens{}, f.err
}

func TestConnector_CountsErrorsByKind(t *testing.T) {
	t.Parallel()
	cases := []struct {
		err  error
		kind string
	}{
		{fmt.Errorf("x: %w", idp.ErrRefused), "refused"},
		{fmt.Errorf("x: %w", idp.ErrUnavailable), "unavailable"},
		{fmt.Errorf("x: %w", idp.ErrInvalidResponse), "invalid_response"},
		{errors.New("boom"), "other"},
	}
	for _, tc := range cases {
		m := NewMetrics()
		c := InstrumentConnector(fakeConnector{tc.err}, m, nil)
		_, _, _ = c.Refresh(context.Background(), idp.Tokens{})
		if got := testutil.ToFloat64(m.idpErrors.WithLabelValues("refresh", tc.kind)); got != 1 {
			t.Errorf("%v: idp_errors_total{refresh,%s} = %v, want 1", tc.err, tc.kind, got)
		}
		if got := testutil.CollectAndCount(m.idpDuration); got != 1 {
			t.Errorf("%v: %d duration series, want 1", tc.err, got)
		}
		if err := c.Discover(context.Background()); err != nil {
			t.Errorf("a connector without discovery: Discover = %v, want nil", err)
		}
	}
}

// The server span continues the caller's trace (traceparent), is named after the route
// pattern, and store and identity provider calls are its children.
func TestHTTP_SpanJoinsTheCallersTrace(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	tracer := Tracer(tp)
	m := NewMetrics()
	st := InstrumentStore(memory.New(), m, tracer)
	conn := InstrumentConnector(fakeConnector{}, m, tracer)
	r := chi.NewRouter()
	r.Use(HTTP("internal", m, tracer))
	r.Post("/check/{id}", func(w http.ResponseWriter, r *http.Request) {
		_, _ = st.GetClient(r.Context(), "x", time.Now())
		_, _ = conn.AuthCodeURL(r.Context(), "s", "n", "v")
		w.WriteHeader(http.StatusAccepted)
	})
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	req := httptest.NewRequest(http.MethodPost, "/check/secret-path-value", nil)
	req.Header.Set("traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
	r.ServeHTTP(httptest.NewRecorder(), req)
	spans := exp.GetSpans()
	if len(spans) != 3 {
		t.Fatalf("%d spans, want 3 (store, idp, server): %v", len(spans), spans)
	}
	var server tracetest.SpanStub
	for _, s := range spans {
		if s.SpanKind == trace.SpanKindServer {
			server = s
		}
	}
	if server.Name != "POST /check/{id}" {
		t.Errorf("server span name %q", server.Name)
	}
	if server.SpanContext.TraceID().String() != traceID || server.Parent.SpanID().String() != "00f067aa0ba902b7" {
		t.Errorf("server span does not continue the caller's trace: trace %s parent %s", server.SpanContext.TraceID(), server.Parent.SpanID())
	}
	for _, s := range spans {
		if s.SpanKind == trace.SpanKindServer {
			continue
		}
		if s.Parent.SpanID() != server.SpanContext.SpanID() {
			t.Errorf("span %q is not a child of the request span", s.Name)
		}
		if s.Name != "store.GetClient" && s.Name != "idp.auth_code_url" {
			t.Errorf("unexpected span %q", s.Name)
		}
	}
	if got := testutil.ToFloat64(m.httpRequests.WithLabelValues("internal", "POST", "/check/{id}", "202")); got != 1 {
		t.Errorf("http_requests_total by pattern = %v, want 1", got)
	}
}

func TestTracingEnabled(t *testing.T) {
	t.Parallel()
	cases := []struct {
		env  map[string]string
		want bool
	}{
		{nil, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, true},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true},
		{map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, false},
		{map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}, false},
	}
	for _, tc := range cases {
		env := func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }
		if got := TracingEnabled(env); got != tc.want {
			t.Errorf("%v: enabled %v, want %v", tc.env, got, tc.want)
		}
		tp, err := NewTracerProvider(context.Background(), env)
		if err != nil || (tp != nil) != tc.want {
			t.Errorf("%v: provider %v, %v", tc.env, tp, err)
		}
		if tp != nil {
			_ = tp.Shutdown(context.Background())
		}
	}
}
