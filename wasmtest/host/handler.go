package host

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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
// next's response comes back through the filter chunk by chunk. A request whose headers the
// filter holds until it has the whole body reaches next with that body as one buffer; a body
// still arriving once the headers are released streams on. Released response chunks of an
// event stream or of a body of unknown length are flushed one by one so that streams keep
// flowing; a body of known length is flushed when next flushes or when it is complete (before
// the stream's teardown), as from httputil.ReverseProxy alone, and a body the filter releases
// whole before any of it went out is sent with its length. A local reply from the filter is written instead; if it comes
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
	s.shareReleased = true // nothing below changes what the filter released
	hasBody := r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0
	res, err := s.sendRequestHeaders(ctx, requestHeaders(r), !hasBody)
	// One allocation for the exchange's state: the writer next writes to, the body reader,
	// what the filter released of the request.
	x := &exchange{fw: filterWriter{w: w, s: s, ctx: ctx}, in: requestBody{r: r, size: fh.opts.ChunkSize, done: !hasBody}}
	fw, in, out := &x.fw, &x.in, &x.out
	defer func() {
		fw.mu.Lock()
		abort := fw.abort
		fw.done = true
		fw.mu.Unlock()
		if abort {
			panic(http.ErrAbortHandler) // Envoy resets the stream
		}
	}()
	if fw.finishedBy(res, err) {
		return
	}
	// Until the filter releases the headers, and for a body of known length that fits in one
	// chunk, the body is fed to the filter from this goroutine: next then gets what the
	// filter released of it as one buffer. Only a body still arriving after the headers went
	// on streams to next through a pipe.
	oneChunk := r.ContentLength > 0 && r.ContentLength <= int64(in.chunkSize())
	out.add(res)
	for (out.hdrs == nil || oneChunk) && !in.done && !out.ended {
		res, err := in.next(ctx, s)
		if errors.Is(err, errBodyRead) {
			return // the client went away or was too slow; nothing went upstream
		}
		if fw.finishedBy(res, err) {
			return
		}
		out.add(res)
	}
	if out.hdrs == nil {
		return // nothing was released: the client went away
	}
	if out.ended {
		up, err := upstreamRequest(ctx, r, out.hdrs, bytes.NewReader(out.body))
		if fw.badRequest(err) {
			return
		}
		fh.next.ServeHTTP(fw, up)
		fw.finish()
		return
	}

	upCtx, cancelUp := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	defer func() {
		// The pump may still be reading a slow client's body; it stops at its next step (the
		// pipe is closed, the stream ends) and can no longer write to the client.
		cancelUp()
		pr.CloseWithError(errUpstreamDone)
	}()
	go func() {
		if _, err := pw.Write(out.body); err != nil {
			return
		}
		for !in.done {
			res, err := in.next(ctx, s)
			if errors.Is(err, errBodyRead) {
				pw.CloseWithError(err)
				return
			}
			if fw.finishedBy(res, err) {
				cancelUp()
				pw.CloseWithError(errReplied)
				return
			}
			if len(res.Body) > 0 {
				if _, err := pw.Write(res.Body); err != nil {
					return
				}
			}
			if res.EndOfStream {
				break
			}
		}
		pw.Close()
	}()
	up, err := upstreamRequest(upCtx, r, out.hdrs, pr)
	if fw.badRequest(err) {
		return
	}
	fh.next.ServeHTTP(fw, up)
	fw.finish()
}

// exchange is the state of one request through Handler.
type exchange struct {
	fw  filterWriter
	in  requestBody
	out requestOut
}

// requestOut gathers what the filter released of the request.
type requestOut struct {
	hdrs  Headers
	body  []byte
	ended bool // the whole request was released
}

func (o *requestOut) add(res Result) {
	if res.Headers != nil && o.hdrs == nil {
		o.hdrs = res.Headers
	}
	if o.body == nil {
		o.body = res.Body // the caller's own (Stream.take)
	} else {
		o.body = append(o.body, res.Body...)
	}
	o.ended = o.ended || res.EndOfStream
}

// requestBody reads the client's body and gives it to the filter chunk by chunk.
type requestBody struct {
	r    *http.Request
	size int
	buf  []byte
	done bool // the body has been read to its end (or failed)
}

// chunkSize is the size of the body reads (HandlerOptions.ChunkSize).
func (b *requestBody) chunkSize() int {
	if b.size <= 0 {
		return 32 << 10
	}
	return b.size
}

// errBodyRead is a client body that could not be read.
var errBodyRead = errors.New("read the request body")

// next reads the next chunk of the body and sends it to the filter. A read error is given
// as errBodyRead (nothing was sent).
func (b *requestBody) next(ctx context.Context, s *Stream) (Result, error) {
	if b.buf == nil {
		size := b.chunkSize()
		if n := b.r.ContentLength; n > 0 && n < int64(size) {
			size = int(n) // a body of known length is read whole, with its end, in one read
		}
		b.buf = make([]byte, size)
	}
	n, rerr := b.r.Body.Read(b.buf)
	eos := rerr != nil
	if rerr != nil && !errors.Is(rerr, io.EOF) {
		b.done = true
		return Result{}, fmt.Errorf("%w: %w", errBodyRead, rerr)
	}
	b.done = eos
	return s.SendRequestBody(ctx, b.buf[:n], eos)
}

// badRequest answers 502 when the filter released headers the upstream request cannot be
// built from, and reports whether it did.
func (fw *filterWriter) badRequest(err error) bool {
	if err == nil {
		return false
	}
	fw.mu.Lock()
	if !fw.done {
		fw.done = true
		http.Error(fw.w, "bad request from filter: "+err.Error(), http.StatusBadGateway)
	}
	fw.mu.Unlock()
	return true
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

// filterWriter is the ResponseWriter next writes to: the response goes through the filter
// before it reaches the client.
type filterWriter struct {
	w   http.ResponseWriter
	s   *Stream
	ctx context.Context

	mu          sync.Mutex
	hdr         http.Header
	wroteHeader bool
	sent        bool  // the filter released the response headers (see pending)
	pending     bool  // released headers not written to w yet (a response of known length)
	status      int   // the released status
	stream      bool  // next's response is a stream, flushed chunk by chunk (isStream)
	remaining   int64 // bytes of next's body still to come by its content-length; -1: unknown
	ended       bool  // the end of next's response was given to the filter
	done        bool  // the client's response is complete (or was a local reply)
	abort       bool  // the stream must be reset (the handler panics with ErrAbortHandler)
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
	h := responseHeaders(code, fw.hdr)
	fw.stream = isStream(h)
	fw.remaining = -1
	if n, err := strconv.ParseInt(h.Value("content-length"), 10, 64); err == nil && n > 0 {
		fw.remaining = n
	}
	res, err := fw.s.sendResponseHeaders(fw.ctx, h, false)
	fw.emitLocked(res, err)
}

// Write gives a chunk of next's response to the filter. The chunk that completes a body of
// known length carries the end of the stream, as Envoy's codec gives it with the last data;
// bytes past that length are refused (http.ErrContentLength), as net/http refuses them.
func (fw *filterWriter) Write(b []byte) (int, error) {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	fw.writeHeaderLocked(http.StatusOK)
	n, werr := len(b), error(nil)
	eos := false
	if fw.remaining >= 0 {
		if int64(n) >= fw.remaining {
			if int64(n) > fw.remaining {
				n, werr = int(fw.remaining), http.ErrContentLength
			}
			eos = true
		}
		fw.remaining -= int64(n)
	}
	if fw.done || fw.ended {
		if fw.ended && werr == nil {
			werr = http.ErrContentLength
			n = 0
		}
		return n, werr // the response was replaced (drop what the upstream sends), or is complete
	}
	res, err := fw.s.SendResponseBody(fw.ctx, b[:n], eos)
	fw.ended = eos
	fw.emitLocked(res, err)
	return n, werr
}

// Flush sends what the filter released so far to the client (next flushes, as
// httputil.ReverseProxy does after each write of a stream).
func (fw *filterWriter) Flush() {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	if fw.sent && !fw.abort {
		fw.writeHeadersLocked()
		fw.flushLocked()
	}
}

// finish ends the response after next returned.
func (fw *filterWriter) finish() {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	fw.writeHeaderLocked(http.StatusOK)
	if fw.done || fw.ended {
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
		fw.status = http.StatusOK
		for _, f := range res.Headers {
			if f.Name == ":status" {
				if n, err := parseStatus(f.Value); err == nil {
					fw.status = n
				}
			}
		}
		addFields(fw.w.Header(), res.Headers, isStatus)
		fw.sent, fw.pending = true, true
	}
	if fw.pending && fw.stream {
		fw.writeHeadersLocked() // a stream's headers go out at once
	}
	if len(res.Body) > 0 {
		if fw.pending && res.EndOfStream && fw.w.Header().Get("Content-Length") == "" {
			// The whole body is in hand before anything went out: the client gets it
			// with its length instead of chunked.
			fw.w.Header().Set("Content-Length", strconv.Itoa(len(res.Body)))
		}
		fw.writeHeadersLocked()
		fw.w.Write(res.Body)
	}
	if res.EndOfStream {
		fw.done = true
		fw.writeHeadersLocked()
		if fw.w.Header().Get("Content-Length") == "" {
			return // net/http completes the response when the handler returns
		}
		// A response of known length is sent complete before the stream's teardown
		// (proxy_on_log and after) runs.
		fw.flushLocked()
		return
	}
	if fw.stream && (res.Headers != nil || len(res.Body) > 0) {
		fw.flushLocked() // a stream's chunks are flushed one by one
	}
}

func (fw *filterWriter) flushLocked() {
	if f, ok := fw.w.(http.Flusher); ok {
		f.Flush()
	}
}

// writeHeadersLocked writes the released response headers to the client if they are still
// held (pending).
func (fw *filterWriter) writeHeadersLocked() {
	if fw.pending {
		fw.pending = false
		fw.w.WriteHeader(fw.status)
	}
}

func (fw *filterWriter) headersSent() bool { return fw.sent }

// isStream reports whether next's response may be a stream whose chunks must reach the
// client as they come: an event stream, or a body of unknown length. Other responses reach
// the client when next flushes or when the filter has released them whole, as from
// httputil.ReverseProxy, in one write where they fit.
func isStream(h Headers) bool {
	if !h.Has("content-length") {
		return true
	}
	ct := strings.ToLower(strings.TrimSpace(h.Value("content-type")))
	return strings.HasPrefix(ct, "text/event-stream")
}

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
