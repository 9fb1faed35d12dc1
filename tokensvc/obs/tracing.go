package obs

import (
	"context"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// TracerName is the instrumentation scope of the token service's spans.
const TracerName = "github.com/mcpmesh/gateway/tokensvc"

// DefaultServiceName is service.name unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES
// sets it.
const DefaultServiceName = "mcp-gateway-tokensvc"

// LookupEnv reads an environment variable (os.LookupEnv in production).
type LookupEnv func(key string) (string, bool)

// TracingEnabled reports whether the environment asks for traces: OTEL_SDK_DISABLED is not
// "true", and OTEL_TRACES_EXPORTER is "otlp" or, when it is unset, OTEL_EXPORTER_OTLP_ENDPOINT
// or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set. OTEL_TRACES_EXPORTER=none disables them.
func TracingEnabled(env LookupEnv) bool {
	get := func(k string) string { v, _ := env(k); return strings.TrimSpace(v) }
	if strings.EqualFold(get("OTEL_SDK_DISABLED"), "true") {
		return false
	}
	switch exp := strings.ToLower(get("OTEL_TRACES_EXPORTER")); exp {
	case "otlp":
		return true
	case "":
		return get("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
	default:
		return false
	}
}

// NewTracerProvider returns the tracer provider the environment asks for: nil (tracing off)
// unless TracingEnabled, else an SDK provider batching spans to the OTLP/HTTP exporter,
// which reads the standard OTEL_EXPORTER_OTLP_* variables (endpoint, headers, timeout,
// certificates, compression); the sampler follows OTEL_TRACES_SAMPLER(_ARG) (default
// parentbased_always_on) and the resource OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES.
// The caller shuts the provider down at exit, which flushes pending spans.
func NewTracerProvider(ctx context.Context, env LookupEnv) (*sdktrace.TracerProvider, error) {
	if !TracingEnabled(env) {
		return nil, nil
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	res := resource.Default() // honours OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES
	if _, ok := env("OTEL_SERVICE_NAME"); !ok && !hasServiceName(env) {
		if named, err := resource.Merge(res, resource.NewSchemaless(attribute.String("service.name", DefaultServiceName))); err == nil {
			res = named
		}
	}
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res)), nil
}

func hasServiceName(env LookupEnv) bool {
	v, _ := env("OTEL_RESOURCE_ATTRIBUTES")
	return strings.Contains(v, "service.name=")
}

// Tracer returns the token service's tracer of tp; nil for a nil tp (tracing off).
func Tracer(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		return nil
	}
	return tp.Tracer(TracerName)
}
