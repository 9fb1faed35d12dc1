package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
)

// Bounds of the remote token service (RemoteTokenService).
const (
	// remoteConnectTimeout bounds one connection attempt to a replica (Envoy's cluster
	// connect_timeout is often set this low for in-cluster services).
	remoteConnectTimeout = time.Second
	// remoteResponseTimeout bounds the wait for a replica's response headers on the public
	// paths: Envoy's default route timeout. Check calls are bounded by check_timeout.
	remoteResponseTimeout = 15 * time.Second
	// maxRemoteBody bounds a request body forwarded to the token service; it is held so
	// that a connect failure can be retried at another replica. The token service's own
	// bodies are far smaller (64 KiB).
	maxRemoteBody = 1 << 20
)

// RemoteTokenService returns the token service as separate processes: public is the base
// URLs (http://host:port) of the replicas' public listeners, internal those of their internal
// listeners, in matching or any order. Requests go to the replicas round-robin; a replica that
// refuses the connection is skipped and the request is sent to the next one (Envoy's
// retry_on: connect-failure), never after it may have reached a replica. When none can be
// reached the answer is 503, as Envoy's for an upstream connect failure; a replica too slow
// to send its headers is 504.
//
// Gateway paths keep their original Host (the token service checks it against the routes)
// and get a fresh X-Forwarded-For naming the client's address (the edge discards what the
// client sent; set token_service.trusted_proxy_hops: 1 on the replicas).
func RemoteTokenService(public, internal []string, logger *slog.Logger) (TokenService, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	pub, err := newReplicaProxy("public", public, logger)
	if err != nil {
		return TokenService{}, err
	}
	in, err := newReplicaProxy("internal", internal, logger)
	if err != nil {
		return TokenService{}, err
	}
	return TokenService{Public: pub, Internal: in}, nil
}

// replicaProxy forwards requests to a set of replicas.
type replicaProxy struct {
	name      string
	targets   []*url.URL
	next      atomic.Uint64
	transport *http.Transport
	logger    *slog.Logger
}

func newReplicaProxy(name string, raw []string, logger *slog.Logger) (*replicaProxy, error) {
	if len(raw) == 0 {
		return nil, fmt.Errorf("remote token service: no %s URL", name)
	}
	p := &replicaProxy{name: name, logger: logger}
	for _, r := range raw {
		u, err := url.Parse(strings.TrimSpace(r))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
			return nil, fmt.Errorf("remote token service: %s URL %q: want http(s)://host:port", name, r)
		}
		u.Path = ""
		p.targets = append(p.targets, u)
	}
	p.transport = &http.Transport{
		DialContext:           (&net.Dialer{Timeout: remoteConnectTimeout}).DialContext,
		ResponseHeaderTimeout: remoteResponseTimeout,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		DisableCompression:    true,
	}
	return p, nil
}

// hopHeaders are not forwarded in either direction (RFC 9110 §7.6.1).
var hopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate", "Proxy-Authorization",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// edgeHeaders are what the edge sets itself: a client's values are dropped.
var edgeHeaders = []string{"X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "Forwarded"}

func (p *replicaProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body []byte
	if r.Body != nil && r.Body != http.NoBody {
		b, err := io.ReadAll(io.LimitReader(r.Body, maxRemoteBody+1))
		switch {
		case err != nil:
			writeError(w, http.StatusBadRequest, "invalid_request", "the request body could not be read")
			return
		case len(b) > maxRemoteBody:
			writeError(w, http.StatusRequestEntityTooLarge, "request_too_large", "request body too large")
			return
		}
		body = b
	}
	n := len(p.targets)
	start := int(p.next.Add(1) % uint64(n))
	var lastErr error
	for i := range n {
		target := p.targets[(start+i)%n]
		resp, err := p.transport.RoundTrip(p.outgoing(r.Context(), r, target, body))
		if err == nil {
			p.copyResponse(w, resp)
			return
		}
		lastErr = err
		if !isConnectFailure(err) || r.Context().Err() != nil {
			break // it may have reached the replica: never resend
		}
	}
	status, desc := http.StatusServiceUnavailable, "the token service cannot be reached"
	if isTimeout(lastErr) && !isConnectFailure(lastErr) {
		status, desc = http.StatusGatewayTimeout, "the token service did not answer in time"
	}
	p.logger.Warn("token service unreachable", "listener", p.name, "error", lastErr)
	writeError(w, status, "temporarily_unavailable", desc)
}

// outgoing builds the request to one replica.
func (p *replicaProxy) outgoing(ctx context.Context, in *http.Request, target *url.URL, body []byte) *http.Request {
	u := *target
	u.Path, u.RawPath, u.RawQuery = in.URL.Path, in.URL.RawPath, in.URL.RawQuery
	var rd io.Reader = http.NoBody
	if body != nil {
		rd = bytes.NewReader(body)
	}
	out, _ := http.NewRequestWithContext(ctx, in.Method, u.String(), rd)
	out.Header = in.Header.Clone()
	for _, h := range append(hopHeaders, edgeHeaders...) {
		out.Header.Del(h)
	}
	if body != nil {
		out.ContentLength = int64(len(body))
	}
	out.Host = in.Host
	if ip, _, err := net.SplitHostPort(in.RemoteAddr); err == nil {
		out.Header.Set("X-Forwarded-For", ip)
	}
	proto := "http"
	if in.TLS != nil {
		proto = "https"
	}
	out.Header.Set("X-Forwarded-Proto", proto)
	return out
}

func (p *replicaProxy) copyResponse(w http.ResponseWriter, resp *http.Response) {
	defer resp.Body.Close()
	h := w.Header()
	for k, vs := range resp.Header {
		h[k] = append([]string(nil), vs...)
	}
	for _, k := range hopHeaders {
		h.Del(k)
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

// isConnectFailure reports whether err means no connection was made, so the request cannot
// have reached the replica.
func isConnectFailure(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}
