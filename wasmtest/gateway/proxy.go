package gateway

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"

	"github.com/mcpmesh/gateway/shared/pluginconf"
)

// MaxRequestBody bounds a request body the local gateway holds before forwarding it.
const MaxRequestBody = 16 << 20

// bufferBody reads the body the filter released and forwards it with a Content-Length, the
// way Envoy forwards a body its filter buffered. Streaming it chunked into the MCP Go SDK's
// server made conformance scenarios with server-to-client requests (sampling, elicitation)
// hang now and then; with a length they do not. The buffered body is also r's GetBody, which
// the proxy's Rewrite uses to hand it to the transport as an in-memory body (inMemoryBody).
func bufferBody(w http.ResponseWriter, r *http.Request) bool {
	if r.Body == nil || r.Body == http.NoBody {
		return true
	}
	b, err := readBody(r.Body, r.ContentLength)
	switch {
	case err != nil:
		writeError(w, http.StatusBadRequest, "invalid_request", "the request body could not be read")
		return false
	case len(b) > MaxRequestBody:
		writeError(w, http.StatusRequestEntityTooLarge, "request_too_large", "request body too large")
		return false
	}
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	return true
}

// maxAnnouncedPrealloc bounds the buffer readBody sizes from an announced length: the length
// is the client's word, and a body the filter did not buffer reaches bufferBody before it
// arrives, so trusting it whole would let a few header bytes hold 16 MiB until the body
// deadline (TestReadBody_MemoryFollowsBytesReceivedNotAnnounced). MCP bodies fit in it.
const maxAnnouncedPrealloc = 64 << 10

// readBody reads body up to MaxRequestBody+1 bytes; a length announced within the bound (the
// filter's content-length, which it may have left stale after changing the body) sizes the
// buffer, up to maxAnnouncedPrealloc, so that a body of that length is read without growing it.
func readBody(body io.Reader, announced int64) ([]byte, error) {
	if announced <= 0 || announced > MaxRequestBody {
		return io.ReadAll(io.LimitReader(body, MaxRequestBody+1))
	}
	b := make([]byte, 0, min(announced+1, maxAnnouncedPrealloc)) // +1: the read that finds the end fits without growing
	lr := io.LimitReader(body, MaxRequestBody+1)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := lr.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if errors.Is(err, io.EOF) {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

// inMemoryBody gives the transport the body bufferBody holds instead of the wrapper
// httputil.ReverseProxy puts around every body: the transport then writes the request's
// headers and body in one write, as it does for any in-memory body, instead of flushing the
// headers on their own first (one system call and one TCP segment fewer per request).
func inMemoryBody(pr *httputil.ProxyRequest) {
	if pr.In.GetBody != nil && pr.In.ContentLength > 0 {
		if b, err := pr.In.GetBody(); err == nil {
			pr.Out.Body = b
		}
	}
}

// copyBuffers lends the proxies the 32 KiB buffers through which they copy responses
// (httputil.ReverseProxy allocates one per response otherwise). A buffer only carries bytes
// on their way: the proxy writes to the filter exactly the bytes it has just read into it, and
// the filter keeps a copy of what it holds, never the buffer
// (TestGateway_PooledCopyBuffersLeakNothingBetweenResponses).
type copyBuffers struct{ pool sync.Pool }

const copyBufferSize = 32 << 10

func (p *copyBuffers) Get() []byte {
	if b, ok := p.pool.Get().(*[copyBufferSize]byte); ok {
		return b[:]
	}
	return new([copyBufferSize]byte)[:]
}

func (p *copyBuffers) Put(b []byte) {
	if len(b) == copyBufferSize {
		p.pool.Put((*[copyBufferSize]byte)(b))
	}
}

// newProxy forwards to a route's upstream: the from path prefix is replaced by the to path
// (Envoy's prefix_rewrite), the Host becomes the upstream's (auto_host_rewrite), and an
// unreachable upstream is answered 502 with a JSON body.
func (g *Gateway) newProxy(route pluginconf.Route, target *url.URL) *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			path := pr.In.URL.EscapedPath()
			if route.PathPrefix != "/" {
				path = strings.TrimPrefix(path, route.PathPrefix)
			}
			path = strings.TrimSuffix(target.EscapedPath(), "/") + path
			if path == "" || path[0] != '/' {
				path = "/" + path
			}
			u := *target
			u.RawPath, u.Path, u.RawQuery = "", "", pr.In.URL.RawQuery
			if p, err := url.PathUnescape(path); err == nil {
				u.Path, u.RawPath = p, path
			}
			pr.Out.URL = &u
			pr.Out.Host = target.Host
			pr.SetXForwarded()
			inMemoryBody(pr)
		},
		BufferPool: &g.buffers,
		// FlushInterval 0: an event stream and a body of unknown length are flushed write by
		// write, a response of known length when it is complete (httputil.ReverseProxy).
		Transport: g.transport,
		ErrorLog:  slog.NewLogLogger(g.logger.Handler(), slog.LevelWarn),
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			g.logger.Warn("upstream unreachable", "route", route.ID, "error", err)
			writeError(w, http.StatusBadGateway, "bad_gateway", "the upstream of this route is unreachable")
		},
	}
}
