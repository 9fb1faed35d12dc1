package obs

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpmesh/gateway/tokensvc/idp"
)

// Discoverer is implemented by connectors that can load the provider's discovery document
// on demand (idp.OIDC). Discover returns nil once discovery has succeeded at least once.
type Discoverer interface {
	Discover(ctx context.Context) error
}

// Connector decorates an idp.Connector: each call is timed (idp_request_duration_seconds),
// counted when it fails (idp_errors_total, by kind) and, with a tracer, traced as a child
// span "idp.<Operation>". Discover is forwarded when the decorated connector has it;
// otherwise it succeeds.
type Connector struct {
	next   idp.Connector
	m      *Metrics
	tracer trace.Tracer
}

var _ idp.Connector = (*Connector)(nil)

// InstrumentConnector returns next decorated. m and tracer may be nil.
func InstrumentConnector(next idp.Connector, m *Metrics, tracer trace.Tracer) *Connector {
	return &Connector{next: next, m: m, tracer: tracer}
}

func (c *Connector) begin(ctx context.Context, op string) (context.Context, func(error)) {
	start := time.Now()
	var span trace.Span
	if c.tracer != nil {
		ctx, span = c.tracer.Start(ctx, "idp."+op, trace.WithSpanKind(trace.SpanKindClient))
	}
	return ctx, func(err error) {
		if c.m != nil {
			c.m.idpDuration.WithLabelValues(op).Observe(time.Since(start).Seconds())
			if err != nil {
				c.m.idpErrors.WithLabelValues(op, errorKind(err)).Inc()
			}
		}
		if span != nil {
			if err != nil {
				span.SetStatus(codes.Error, errorKind(err))
			}
			span.End()
		}
	}
}

func errorKind(err error) string {
	switch {
	case errors.Is(err, idp.ErrRefused):
		return "refused"
	case errors.Is(err, idp.ErrUnavailable):
		return "unavailable"
	case errors.Is(err, idp.ErrInvalidResponse):
		return "invalid_response"
	}
	return "other"
}

// AuthCodeURL forwards to the decorated connector (it may run discovery).
func (c *Connector) AuthCodeURL(ctx context.Context, state, nonce, pkceVerifier string) (_ string, err error) {
	ctx, end := c.begin(ctx, "auth_code_url")
	defer func() { end(err) }()
	return c.next.AuthCodeURL(ctx, state, nonce, pkceVerifier)
}

// Exchange forwards to the decorated connector.
func (c *Connector) Exchange(ctx context.Context, code, pkceVerifier, nonce string) (_ idp.Identity, _ idp.Tokens, err error) {
	ctx, end := c.begin(ctx, "exchange")
	defer func() { end(err) }()
	return c.next.Exchange(ctx, code, pkceVerifier, nonce)
}

// Refresh forwards to the decorated connector.
func (c *Connector) Refresh(ctx context.Context, t idp.Tokens) (_ idp.Identity, _ idp.Tokens, err error) {
	ctx, end := c.begin(ctx, "refresh")
	defer func() { end(err) }()
	return c.next.Refresh(ctx, t)
}

// Discover forwards to the decorated connector's Discover, if any.
func (c *Connector) Discover(ctx context.Context) (err error) {
	d, ok := c.next.(Discoverer)
	if !ok {
		return nil
	}
	ctx, end := c.begin(ctx, "discover")
	defer func() { end(err) }()
	return d.Discover(ctx)
}
