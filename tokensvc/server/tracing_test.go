package server

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpmesh/gateway/shared/checkapi"
	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/tokensvc/store/memory"
)

// The filter's check call carries the caller's traceparent: the token service's span joins
// that trace, with the store calls as its children; the public listener is traced too.
func TestTracing_BothListenersJoinTheCallersTrace(t *testing.T) {
	t.Parallel()
	cfg, err := config.Parse([]byte(testConfigYAML), nil)
	if err != nil {
		t.Fatal(err)
	}
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	st := memory.New()
	srv, err := New(context.Background(), cfg, WithStore(st), WithConnector(newIDP()), WithTracerProvider(tp),
		WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	e := &testEnv{t: t, cfg: cfg, store: st, clock: &testClock{}, srv: srv}
	e.clock.t = srv.now()
	at := e.token(e.session("alice"), demoRoute, 3600e9)

	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	r := httptest.NewRequest(http.MethodPost, "http://tokensvc.internal"+paths.Check,
		strings.NewReader(`{"route_id":"`+demoRoute+`","host":"mcp.example.com","token":"`+at+`"}`))
	r.Header.Set(checkapi.KeyHeader, cfg.FilterKey())
	r.Header.Set("traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
	rec := httptest.NewRecorder()
	srv.InternalHandler().ServeHTTP(rec, r)
	if rec.Code != http.StatusOK {
		t.Fatalf("check: %d %s", rec.Code, rec.Body)
	}
	pub := httptest.NewRequest(http.MethodGet, "https://mcp.example.com"+paths.ProtectedResourceMetadata+"/mcp", nil)
	srv.PublicHandler().ServeHTTP(httptest.NewRecorder(), pub)

	var check, public tracetest.SpanStub
	children := 0
	for _, s := range exp.GetSpans() {
		switch {
		case s.SpanKind == trace.SpanKindServer && s.Name == "POST "+paths.Check:
			check = s
		case s.SpanKind == trace.SpanKindServer:
			public = s
		}
	}
	for _, s := range exp.GetSpans() {
		if strings.HasPrefix(s.Name, "store.") && s.Parent.SpanID() == check.SpanContext.SpanID() {
			children++
		}
	}
	if check.SpanContext.TraceID().String() != traceID {
		t.Errorf("the check span is not in the caller's trace: %+v", exp.GetSpans())
	}
	if children == 0 {
		t.Error("no store span under the check span")
	}
	if public.Name != "GET "+paths.ProtectedResourceMetadata+"/*" {
		t.Errorf("public span name %q", public.Name)
	}
}
