package gateway

import (
	"errors"
	"io"
	"net/http"
	"sync"
	"time"
)

// Default timeouts of the local gateway's listeners (Timeouts).
const (
	// DefaultReadHeaderTimeout bounds reading a request's headers, as the token service's
	// listeners do.
	DefaultReadHeaderTimeout = 10 * time.Second
	// DefaultIdleTimeout closes a keep-alive connection idle that long, as the token
	// service's listeners do.
	DefaultIdleTimeout = 120 * time.Second
	// DefaultTokenServiceBodyTimeout bounds the body of a request to the token service: the
	// standalone token service's ReadTimeout.
	DefaultTokenServiceBodyTimeout = 30 * time.Second
	// DefaultUpstreamBodyTimeout bounds the body of a request to a route's upstream; a body
	// of MaxRequestBody needs about 56 KB/s.
	DefaultUpstreamBodyTimeout = 5 * time.Minute
	// MaxHeaderBytes bounds a request's header block, as the token service's listeners do.
	MaxHeaderBytes = 64 << 10
)

// Timeouts bound slow clients. The body bounds count from the moment the request reaches the
// gateway (its headers are read) and are lifted as soon as the body has been read, so they
// never cut a response: an event stream, whether it answers a GET or a POST, flows for as long
// as it lasts. There is no write timeout for the same reason. Zero fields take the defaults.
type Timeouts struct {
	// ReadHeader bounds reading the request line and headers (DefaultReadHeaderTimeout).
	ReadHeader time.Duration
	// Idle bounds the wait for the next request on a keep-alive connection
	// (DefaultIdleTimeout).
	Idle time.Duration
	// TokenServiceBody bounds reading the body of a request the gateway hands to the
	// in-process token service: its paths on route hosts and the authenticate host
	// (DefaultTokenServiceBodyTimeout).
	TokenServiceBody time.Duration
	// UpstreamBody bounds reading the body of a request to a route's upstream
	// (DefaultUpstreamBodyTimeout).
	UpstreamBody time.Duration
}

func (t Timeouts) withDefaults() Timeouts {
	or := func(d, def time.Duration) time.Duration {
		if d > 0 {
			return d
		}
		return def
	}
	return Timeouts{
		ReadHeader:       or(t.ReadHeader, DefaultReadHeaderTimeout),
		Idle:             or(t.Idle, DefaultIdleTimeout),
		TokenServiceBody: or(t.TokenServiceBody, DefaultTokenServiceBodyTimeout),
		UpstreamBody:     or(t.UpstreamBody, DefaultUpstreamBodyTimeout),
	}
}

// boundBody sets a read deadline on r's connection for r's body (none for a request without
// one) and wraps the body so that the deadline is lifted when the body has been read. A body
// that does not arrive in time fails its read; the connection is then closed.
//
// Lifting the deadline when the body ends makes it bound the body alone: nothing read from
// the connection afterwards (net/http's background read, which watches for the client going
// away during a long response such as an event stream) is subject to it.
func (g *Gateway) boundBody(w http.ResponseWriter, r *http.Request) {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return
	}
	d := g.timeouts.UpstreamBody
	if g.toTokenService(r) {
		d = g.timeouts.TokenServiceBody
	}
	b := &deadlineBody{ReadCloser: r.Body, rc: http.NewResponseController(w)}
	if err := b.rc.SetReadDeadline(time.Now().Add(d)); err != nil {
		g.logger.Warn("cannot bound the request body", "error", err)
		return
	}
	r.Body = b
}

// deadlineBody lifts the connection's read deadline when the body has been read to its end.
type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	once sync.Once
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) {
		b.once.Do(b.lift)
	}
	return n, err
}

func (b *deadlineBody) lift() { _ = b.rc.SetReadDeadline(time.Time{}) }
