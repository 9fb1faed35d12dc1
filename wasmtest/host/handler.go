package host

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// HandlerOptions tune Host.Handler.
type HandlerOptions struct {
	// StreamInfo describes the stream of an incoming request; by default it is derived from
	// the request (remote and local address, protocol, TLS).
	StreamInfo func(r *http.Request) StreamInfo
	// ChunkSize is the size of the request body reads fed to the filter; default 32 KiB.
	ChunkSize int
}

// Handler returns an http.Handler that runs each request through the filter, the way Envoy
// would in front of next: the request headers and body go to the filter as they arrive, what
// it lets through is handed to next (typically an httputil.ReverseProxy to the upstream), and
// next's response comes back through the filter chunk by chunk, flushed after every chunk so
// event streams keep flowing. A local reply from the filter is written instead; if it comes
// after next started, next's request is cancelled. Trailers are not carried.
func (h *Host) Handler(next http.Handler, opts *HandlerOptions) http.Handler {
	if opts == nil {
		opts = &HandlerOptions{}
	}
	return &filterHandler{h: h, next: next, opts: *opts}
}

type filterHandler struct {
	h    *Host
	next http.Handler
	opts HandlerOptions
}

// hopByHop are the connection-specific headers Envoy's codecs drop.
var hopByHop = map[string]bool{"connection": true, "keep-alive": true, "proxy-connection": true,
	"transfer-encoding": true, "upgrade": true, "te": true, "host": true}

func (fh *filterHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	info := defaultStreamInfo(r)
	if fh.opts.StreamInfo != nil {
		info = fh.opts.StreamInfo(r)
	}
	s, err := fh.h.NewStream(ctx, info)
	if err != nil {
		http.Error(w, "filter unavailable", http.StatusServiceUnavailable)
		return
	}
	defer s.Close()
	hasBody := r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0
	res, err := s.SendRequestHeaders(ctx, requestHeaders(r), !hasBody)
	fw := &filterWriter{w: w, s: s, ctx: ctx}
	if fw.finishedBy(res, err) {
		if fw.abortStream() {
			panic(http.ErrAbortHandler)
		}
		return
	}
	upCtx, cancelUp := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	pumpDone := make(chan struct{})
	defer func() {
		// The pump may still be reading a slow client's body; it stops at its next step (the
		// pipe is closed, the stream ends) and can no longer write to the client.
		cancelUp()
		pr.CloseWithError(errUpstreamDone)
		fw.mu.Lock()
		abort := fw.abort
		fw.done = true
		fw.mu.Unlock()
		if abort {
			panic(http.ErrAbortHandler) // Envoy resets the stream
		}
	}()
	released := make(chan Headers, 1)
	var once sync.Once
	deliver := func(res Result) bool {
		if res.Headers != nil {
			hdrs := res.Headers
			once.Do(func() { released <- hdrs })
		}
		if len(res.Body) > 0 {
			if _, err := pw.Write(res.Body); err != nil {
				return false
			}
		}
		if res.EndOfStream {
			pw.Close()
		}
		return true
	}
	go func() {
		defer close(pumpDone)
		if !deliver(res) || res.EndOfStream || !hasBody {
			return
		}
		size := fh.opts.ChunkSize
		if size <= 0 {
			size = 32 << 10
		}
		buf := make([]byte, size)
		for {
			n, rerr := r.Body.Read(buf)
			eos := rerr != nil
			if rerr != nil && !errors.Is(rerr, io.EOF) {
				pw.CloseWithError(rerr)
				return
			}
			res, err := s.SendRequestBody(ctx, buf[:n], eos)
			if fw.finishedBy(res, err) {
				cancelUp()
				pw.CloseWithError(errReplied)
				return
			}
			if !deliver(res) || eos {
				return
			}
		}
	}()
	var hdrs Headers
	select {
	case hdrs = <-released:
	case <-pumpDone:
		select {
		case hdrs = <-released:
		default:
			return // answered locally, or the client went away
		}
	case <-ctx.Done():
		return
	}
	up, err := upstreamRequest(upCtx, r, hdrs, pr)
	if err != nil {
		fw.mu.Lock()
		if !fw.done {
			fw.done = true
			http.Error(w, "bad request from filter: "+err.Error(), http.StatusBadGateway)
		}
		fw.mu.Unlock()
		return
	}
	fh.next.ServeHTTP(fw, up)
	fw.finish()
}

var (
	errReplied      = errors.New("answered locally by the filter")
	errUpstreamDone = errors.New("upstream handler returned")
)

func defaultStreamInfo(r *http.Request) StreamInfo {
	info := StreamInfo{SourceAddress: r.RemoteAddr, Protocol: r.Proto}
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		info.DestinationAddress = a.String()
	}
	if r.TLS != nil {
		info.RequestedServerName = r.TLS.ServerName
		info.MTLS = len(r.TLS.PeerCertificates) > 0
	}
	return info
}

// requestHeaders converts r into Envoy's header map: pseudo-headers first, lower-case names,
// hop-by-hop headers dropped.
func requestHeaders(r *http.Request) Headers {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	path := r.RequestURI
	if path == "" || !strings.HasPrefix(path, "/") {
		path = r.URL.RequestURI()
	}
	h := Headers{{":method", r.Method}, {":path", path}, {":authority", r.Host}, {":scheme", scheme}}
	for name, vals := range r.Header {
		lname := strings.ToLower(name)
		if hopByHop[lname] {
			continue
		}
		for _, v := range vals {
			h = append(h, Header{lname, v})
		}
	}
	if r.ContentLength > 0 && !h.Has("content-length") {
		h = append(h, Header{"content-length", strconv.FormatInt(r.ContentLength, 10)})
	}
	return h
}

// upstreamRequest builds the request for next from the headers the filter released.
func upstreamRequest(ctx context.Context, in *http.Request, h Headers, body io.Reader) (*http.Request, error) {
	method, path, authority := h.Value(":method"), h.Value(":path"), h.Value(":authority")
	scheme := h.Value(":scheme")
	if scheme == "" {
		scheme = "http"
	}
	out, err := http.NewRequestWithContext(ctx, method, scheme+"://"+authority+path, body)
	if err != nil {
		return nil, err
	}
	out.RequestURI = path
	out.Host = authority
	out.RemoteAddr = in.RemoteAddr
	out.Proto, out.ProtoMajor, out.ProtoMinor = in.Proto, in.ProtoMajor, in.ProtoMinor
	out.TLS = in.TLS
	out.ContentLength = -1
	for _, f := range h {
		if strings.HasPrefix(f.Name, ":") {
			continue
		}
		if f.Name == "content-length" {
			if n, err := strconv.ParseInt(f.Value, 10, 64); err == nil {
				out.ContentLength = n
			}
		}
		out.Header[http.CanonicalHeaderKey(f.Name)] = append(out.Header[http.CanonicalHeaderKey(f.Name)], f.Value)
	}
	if out.ContentLength == 0 {
		out.Body = http.NoBody
	}
	return out, nil
}

// filterWriter is the ResponseWriter next writes to: the response goes through the filter
// before it reaches the client.
type filterWriter struct {
	w   http.ResponseWriter
	s   *Stream
	ctx context.Context

	mu          sync.Mutex
	hdr         http.Header
	wroteHeader bool
	sent        bool // response headers went to the client
	done        bool // the client's response is complete (or was a local reply)
	abort       bool // the stream must be reset (the handler panics with ErrAbortHandler)
}

// abortStream reports whether the filter reset the stream.
func (fw *filterWriter) abortStream() bool {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	return fw.abort
}

func (fw *filterWriter) Header() http.Header {
	if fw.hdr == nil {
		fw.hdr = http.Header{}
	}
	return fw.hdr
}

func (fw *filterWriter) WriteHeader(code int) {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	fw.writeHeaderLocked(code)
}

func (fw *filterWriter) writeHeaderLocked(code int) {
	if fw.wroteHeader || fw.done {
		return
	}
	if code >= 100 && code < 200 {
		return // informational responses are not given to the filter
	}
	fw.wroteHeader = true
	h := Headers{{":status", strconv.Itoa(code)}}
	for name, vals := range fw.hdr {
		lname := strings.ToLower(name)
		if hopByHop[lname] {
			continue
		}
		for _, v := range vals {
			h = append(h, Header{lname, v})
		}
	}
	res, err := fw.s.SendResponseHeaders(fw.ctx, h, false)
	fw.emitLocked(res, err)
}

func (fw *filterWriter) Write(b []byte) (int, error) {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	fw.writeHeaderLocked(http.StatusOK)
	if fw.done {
		return len(b), nil // the response was replaced; drop what the upstream sends
	}
	res, err := fw.s.SendResponseBody(fw.ctx, b, false)
	fw.emitLocked(res, err)
	return len(b), nil
}

// Flush is a no-op: released chunks are flushed as soon as they are written.
func (fw *filterWriter) Flush() {}

// finish ends the response after next returned.
func (fw *filterWriter) finish() {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	fw.writeHeaderLocked(http.StatusOK)
	if fw.done {
		return
	}
	res, err := fw.s.SendResponseBody(fw.ctx, nil, true)
	fw.emitLocked(res, err)
}

// emitLocked writes what the filter released to the client.
func (fw *filterWriter) emitLocked(res Result, err error) {
	if fw.done {
		return
	}
	if res.Reply != nil && !fw.headersSent() {
		fw.done = true
		writeReply(fw.w, res.Reply)
		return
	}
	if err != nil {
		if errors.Is(err, ErrStreamReset) || (res.Reply != nil && fw.headersSent()) {
			fw.done, fw.abort = true, true
			return
		}
		if errors.Is(err, ErrStreamEnded) {
			fw.done = true
			return
		}
	}
	if res.Headers != nil {
		dst := fw.w.Header()
		status := http.StatusOK
		for _, f := range res.Headers {
			if f.Name == ":status" {
				if n, err := parseStatus(f.Value); err == nil {
					status = n
				}
				continue
			}
			dst[http.CanonicalHeaderKey(f.Name)] = append(dst[http.CanonicalHeaderKey(f.Name)], f.Value)
		}
		fw.w.WriteHeader(status)
		fw.sent = true
	}
	if len(res.Body) > 0 {
		fw.w.Write(res.Body)
	}
	if res.Headers != nil || len(res.Body) > 0 {
		if f, ok := fw.w.(http.Flusher); ok {
			f.Flush()
		}
	}
	if res.EndOfStream {
		fw.done = true
	}
}

func (fw *filterWriter) headersSent() bool { return fw.sent }

// finishedBy writes a local reply (or an error) for a request-side result and reports
// whether the exchange is over.
func (fw *filterWriter) finishedBy(res Result, err error) bool {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	if fw.done {
		return true
	}
	if res.Reply != nil {
		fw.done = true
		if !fw.sent {
			writeReply(fw.w, res.Reply)
		}
		return true
	}
	switch {
	case err == nil:
		return false
	case errors.Is(err, ErrPaused):
		fw.done = true
		if fw.ctx.Err() == nil {
			http.Error(fw.w, "gateway timeout", http.StatusGatewayTimeout)
		}
	case errors.Is(err, ErrStreamReset):
		fw.done, fw.abort = true, true
	default:
		fw.done = true
		if !fw.sent {
			http.Error(fw.w, "filter error", http.StatusInternalServerError)
		}
	}
	return true
}

func writeReply(w http.ResponseWriter, r *LocalReply) {
	dst := w.Header()
	for _, f := range r.Headers {
		dst[http.CanonicalHeaderKey(f.Name)] = append(dst[http.CanonicalHeaderKey(f.Name)], f.Value)
	}
	w.WriteHeader(r.Status)
	w.Write(r.Body)
}
