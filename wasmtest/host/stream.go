package host

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"github.com/tetratelabs/wazero/api"
)

// StreamInfo describes the downstream connection and route of a stream; it feeds the
// properties the guest reads with proxy_get_property.
type StreamInfo struct {
	// SourceAddress and DestinationAddress are "ip:port" (source.address,
	// destination.address; the ports also give source.port and destination.port).
	// Defaults: "127.0.0.1:40000" and "127.0.0.1:8080".
	SourceAddress, DestinationAddress string
	// Protocol is request.protocol; default "HTTP/1.1".
	Protocol string
	// MTLS is connection.mtls.
	MTLS bool
	// RequestedServerName is connection.requested_server_name (SNI).
	RequestedServerName string
	// RouteName and ClusterName are route_name and cluster_name.
	RouteName, ClusterName string
	// Properties adds or overrides property values by dotted path.
	Properties map[string][]byte
	// Worker pins the stream to a worker; -1 (or out of range) picks round robin. The zero
	// value pins to worker 0 only when UseWorker is set.
	Worker    int
	UseWorker bool
	// KeepRequestID keeps the request without an x-request-id; by default the host adds one,
	// as Envoy's connection manager does before the filters run.
	KeepRequestID bool
}

// LocalReply is a response the filter (or the host failing the stream) produced instead of
// forwarding the request.
type LocalReply struct {
	// Status is the HTTP status code.
	Status int
	// Headers are the response headers after the filter's response callbacks, without
	// ":status".
	Headers Headers
	// Body is the response body.
	Body []byte
	// Details is Envoy's response code details ("wasm_fail_stream" when the VM failed).
	Details string
	// GRPCStatus is the gRPC status the guest passed (-1 for plain HTTP).
	GRPCStatus int32
}

// Result is what the filter chain let through after one input.
type Result struct {
	// Headers are the headers released at this step (upstream for the request, downstream
	// for the response), with the filter's changes; nil if none were released.
	Headers Headers
	// Body holds the body bytes released at this step.
	Body []byte
	// Trailers are the trailers released at this step.
	Trailers Headers
	// EndOfStream is set when this direction has been released completely.
	EndOfStream bool
	// Paused is set when the filter holds data of this direction: it buffers the body, or
	// it stopped and waits for more input (the call returned because more input can come).
	Paused bool
	// Reply is set once the stream has been answered locally; nothing more is forwarded.
	Reply *LocalReply
}

// flow is one direction of a stream (Envoy's decoder or encoder side of the filter).
type flow struct {
	hdrs, trl Headers
	hdrsIn    bool // headers received
	hdrsEOS   bool // headers carried end of stream
	hdrsOut   bool // headers released to the next hop
	mapAvail  bool // the header map is reachable by the guest (Envoy request_headers_ != nil)
	trlIn     bool
	trlAvail  bool
	eosIn     bool // end of stream received

	stopAll   bool // headers paused with StopAllIteration: nothing reaches the filter
	stopHdrs  bool // headers paused with StopIteration (AllowOnHeadersStopIteration)
	buffering bool // the last body callback paused: Envoy buffers for the filter
	stopTrl   bool // trailers paused

	body      []byte // the body buffer the guest sees
	bodyAvail bool
	held      []byte // data received while stopAll, not yet given to the filter
	heldEOS   bool
	heldTrl   bool

	done bool   // end of stream released
	out  Result // released output not yet returned to the caller
}

// Stream is one HTTP stream through the filter, pinned to one VM. Its methods are safe to
// call from two goroutines, one per direction.
type Stream struct {
	host  *Host
	vm    *vm
	id    uint32
	info  StreamInfo
	start time.Time

	created   bool // proxy_on_context_create ran
	ended     bool // Close ran
	skip      bool // fail open: the plugin is skipped
	failSent  bool // the 503 for a failed VM was sent
	logPhase  bool
	replied   bool // a local reply was started; nothing more is decoded
	reply     *LocalReply
	replyBase LocalReply // the reply being encoded through the filter
	resetErr  error

	req, resp flow
	props     map[string][]byte
	changed   chan struct{}

	// shareReleased hands released headers to the caller without a copy: Handler sets it, as
	// it never changes them (once released, the host and the filter only read them).
	shareReleased bool
}

// NewStream starts a stream on a worker's VM (round robin unless info pins one). Under
// FailReload a failed VM is recreated first.
func (h *Host) NewStream(ctx context.Context, info StreamInfo) (*Stream, error) {
	want := -1
	if info.UseWorker {
		want = info.Worker
	}
	if info.SourceAddress == "" {
		info.SourceAddress = "127.0.0.1:40000"
	}
	if info.DestinationAddress == "" {
		info.DestinationAddress = "127.0.0.1:8080"
	}
	if info.Protocol == "" {
		info.Protocol = "HTTP/1.1"
	}
	if want < 0 && h.opts.IdleWorkerFirst {
		if s := h.streamOnIdleWorker(info); s != nil {
			return s, nil
		}
	}
	v, err := h.pickWorker(ctx, want)
	if err != nil {
		return nil, err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.newStream(info), nil
}

// newStream registers a stream on v. mu must be held.
func (v *vm) newStream(info StreamInfo) *Stream {
	s := &Stream{host: v.host, vm: v, info: info, start: v.host.now()}
	s.id = v.allocContextID()
	v.streams[s.id] = s
	return s
}

// streamOnIdleWorker starts a stream on the first worker, from the round-robin position on,
// whose VM is live and not running a callback; nil if there is none (Options.IdleWorkerFirst).
func (h *Host) streamOnIdleWorker(info StreamInfo) *Stream {
	if h.closed.Load() {
		return nil
	}
	n := len(h.workers)
	start := int(h.next.Add(1)-1) % n
	for k := range n {
		w := h.workers[(start+k)%n]
		w.mu.Lock()
		v := w.vm
		w.mu.Unlock()
		if v.failed.Load() || !v.mu.TryLock() {
			continue // a failed VM is reloaded or fails its streams on the round-robin path
		}
		s := v.newStream(info)
		v.mu.Unlock()
		return s
	}
	return nil
}

// ID returns the stream's context id.
func (s *Stream) ID() uint32 { return s.id }

// Worker returns the index of the worker the stream runs on.
func (s *Stream) Worker() int { return s.vm.worker }

// Reply returns the local reply, once one has been completed.
func (s *Stream) Reply() *LocalReply {
	s.vm.mu.Lock()
	defer s.vm.mu.Unlock()
	return s.reply
}

// SendRequestHeaders gives the request headers (with :method, :path, :authority, :scheme) to
// the filter. It returns once the filter chain can take more input: immediately if the filter
// continued, otherwise when it resumes the stream or answers it (for example from a
// proxy_http_call response), or when ctx ends (ErrPaused).
func (s *Stream) SendRequestHeaders(ctx context.Context, h Headers, endOfStream bool) (Result, error) {
	if h != nil {
		h = append(make(Headers, 0, len(h)+1), h...) // room for x-request-id
	}
	return s.sendRequestHeaders(ctx, h, endOfStream)
}

// sendRequestHeaders is SendRequestHeaders with headers the stream keeps as they are: the
// caller made them for it and no longer touches them.
func (s *Stream) sendRequestHeaders(ctx context.Context, h Headers, endOfStream bool) (Result, error) {
	return s.input(ctx, &s.req, func() {
		if !s.info.KeepRequestID && !h.Has("x-request-id") {
			h.add("x-request-id", newRequestID())
		}
		s.decodeHeaders(h, endOfStream)
	}, func(f *flow) bool { return f.hdrsIn })
}

// SendRequestBody gives a request body chunk to the filter. Chunks can be sent as they
// arrive; the filter sees them one by one or, while it buffers, the whole body so far.
func (s *Stream) SendRequestBody(ctx context.Context, chunk []byte, endOfStream bool) (Result, error) {
	return s.input(ctx, &s.req, func() { s.decodeData(chunk, endOfStream) }, needHeaders)
}

// SendRequestTrailers gives the request trailers (end of stream) to the filter.
func (s *Stream) SendRequestTrailers(ctx context.Context, t Headers) (Result, error) {
	return s.input(ctx, &s.req, func() { s.decodeTrailers(t.Clone()) }, needHeaders)
}

// SendResponseHeaders gives the upstream response headers (with :status) to the filter.
func (s *Stream) SendResponseHeaders(ctx context.Context, h Headers, endOfStream bool) (Result, error) {
	return s.sendResponseHeaders(ctx, h.Clone(), endOfStream)
}

// sendResponseHeaders is SendResponseHeaders with headers the stream keeps as they are.
func (s *Stream) sendResponseHeaders(ctx context.Context, h Headers, endOfStream bool) (Result, error) {
	return s.input(ctx, &s.resp, func() { s.encodeHeaders(h, endOfStream) },
		func(f *flow) bool { return f.hdrsIn })
}

// SendResponseBody gives a response body chunk to the filter. Released chunks come back at
// once unless the filter buffers, so a streamed (SSE) response keeps flowing.
func (s *Stream) SendResponseBody(ctx context.Context, chunk []byte, endOfStream bool) (Result, error) {
	return s.input(ctx, &s.resp, func() { s.encodeData(chunk, endOfStream) }, needHeaders)
}

// SendResponseTrailers gives the response trailers (end of stream) to the filter.
func (s *Stream) SendResponseTrailers(ctx context.Context, t Headers) (Result, error) {
	return s.input(ctx, &s.resp, func() { s.encodeTrailers(t.Clone()) }, needHeaders)
}

// Wait blocks until the request direction is no longer held by the filter (or the stream is
// answered), then returns what was released since the last call.
func (s *Stream) Wait(ctx context.Context) (Result, error) { return s.wait(ctx, &s.req) }

// WaitResponse is Wait for the response direction.
func (s *Stream) WaitResponse(ctx context.Context) (Result, error) { return s.wait(ctx, &s.resp) }

func needHeaders(f *flow) bool { return !f.hdrsIn }

// input runs one input through the filter under the VM lock, then waits while the filter
// holds the direction. dup reports an input that is out of order.
func (s *Stream) input(ctx context.Context, f *flow, run func(), bad func(*flow) bool) (Result, error) {
	v := s.vm
	v.mu.Lock()
	if err := s.inputErr(f); err != nil {
		r := s.take(f)
		v.mu.Unlock()
		return r, err
	}
	if bad(f) || f.trlIn || (f.eosIn && f.hdrsIn) {
		v.mu.Unlock()
		return Result{}, fmt.Errorf("stream %d: input out of order (headers, body..., trailers; nothing after end of stream)", s.id)
	}
	if f == &s.resp && !s.req.hdrsIn {
		v.mu.Unlock()
		return Result{}, fmt.Errorf("stream %d: response before request headers", s.id)
	}
	run()
	v.runAfter()
	if !s.blocked(f) {
		// Released at once: no second turn on the VM lock, which another stream's callback
		// may hold by then.
		r, err := s.take(f), s.resetErr
		v.mu.Unlock()
		return r, err
	}
	v.mu.Unlock()
	return s.wait(ctx, f)
}

func (s *Stream) inputErr(f *flow) error {
	switch {
	case s.resetErr != nil:
		return s.resetErr
	case s.ended:
		return ErrStreamEnded
	case s.replied, f.done:
		return ErrStreamEnded
	}
	return nil
}

// blocked reports whether the filter holds direction f until something else happens.
func (s *Stream) blocked(f *flow) bool {
	if s.ended || s.resetErr != nil || f.done {
		return false
	}
	if s.replied {
		return s.reply == nil // the local reply is still going through the filter
	}
	return f.stopAll || f.stopTrl || ((f.stopHdrs || f.buffering) && f.eosIn)
}

func (s *Stream) wait(ctx context.Context, f *flow) (Result, error) {
	v := s.vm
	for {
		v.mu.Lock()
		if !s.blocked(f) {
			r := s.take(f)
			err := s.resetErr
			v.mu.Unlock()
			return r, err
		}
		if s.changed == nil {
			s.changed = make(chan struct{})
		}
		ch := s.changed
		v.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			v.mu.Lock()
			r := s.take(f)
			v.mu.Unlock()
			return r, fmt.Errorf("stream %d: %w: %w", s.id, ErrPaused, ctx.Err())
		}
	}
}

// take returns and clears the output accumulated for f. The response direction of a local
// reply is not the caller's: it comes back as Reply.
func (s *Stream) take(f *flow) Result {
	if f == &s.resp && s.replied {
		return Result{Reply: s.reply}
	}
	r := f.out
	f.out = Result{}
	r.Reply = s.reply
	r.Paused = !f.done && !s.replied && (f.stopAll || f.stopHdrs || f.buffering || f.stopTrl)
	return r
}

// merge appends the output of a later step to r.
func (r *Result) merge(next Result) {
	if next.Headers != nil {
		r.Headers = next.Headers
	}
	r.Body = append(r.Body, next.Body...)
	if next.Trailers != nil {
		r.Trailers = next.Trailers
	}
	r.EndOfStream = r.EndOfStream || next.EndOfStream
	r.Paused = next.Paused
	if next.Reply != nil {
		r.Reply = next.Reply
	}
}

// SendRequest sends a whole request: the headers, then the body in one chunk (if any). The
// result merges what the filter released upstream (or its reply).
func (s *Stream) SendRequest(ctx context.Context, h Headers, body []byte) (Result, error) {
	r, err := s.SendRequestHeaders(ctx, h, len(body) == 0)
	if err != nil || r.Reply != nil || len(body) == 0 {
		return r, err
	}
	next, err := s.SendRequestBody(ctx, body, true)
	r.merge(next)
	return r, err
}

// SendResponse sends a whole upstream response (headers with :status, then the body in one
// chunk, if any) and merges what the filter released downstream (or its reply).
func (s *Stream) SendResponse(ctx context.Context, h Headers, body []byte) (Result, error) {
	r, err := s.SendResponseHeaders(ctx, h, len(body) == 0)
	if err != nil || r.Reply != nil || len(body) == 0 {
		return r, err
	}
	next, err := s.SendResponseBody(ctx, body, true)
	r.merge(next)
	return r, err
}

// signal wakes waiters after a change made outside their own call.
func (s *Stream) signal() {
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
}

// call runs a stream callback with the stream as current context.
func (s *Stream) call(fn api.Function, name string, args ...uint64) (action uint64, err error) {
	v := s.vm
	saved := v.current
	v.current = s.id
	v.stopNext = false
	action, err = v.call(fn, name, args...)
	v.current = saved
	if v.stopNext {
		action = actionStopped
		v.stopNext = false
	}
	return action, err
}

// ensureCreated calls proxy_on_context_create(stream, root) once (Envoy's onCreate).
func (s *Stream) ensureCreated() error {
	if s.created {
		return nil
	}
	s.created = true
	if s.vm.exp.onContextCreate == nil {
		return nil
	}
	_, err := s.call(s.vm.exp.onContextCreate, "proxy_on_context_create", uint64(s.id), uint64(s.vm.rootID))
	return err
}

// failed applies Envoy's CHECK_FAIL: with a failed VM, fail open (skip the plugin, let
// everything through) or fail the stream closed with a 503.
func (s *Stream) failed() bool {
	if s.skip {
		return true
	}
	if !s.vm.failed.Load() {
		return false
	}
	if s.host.opts.FailStrategy == FailOpen {
		s.skip = true
		s.passAll(&s.req)
		s.passAll(&s.resp)
		return true
	}
	if !s.failSent {
		s.failSent = true
		s.sendLocalReply(LocalReply{Status: 503, Details: "wasm_fail_stream", GRPCStatus: 14}, true)
	}
	return true
}

// passAll releases everything held in f (fail open).
func (s *Stream) passAll(f *flow) {
	f.stopAll, f.stopHdrs, f.buffering, f.stopTrl = false, false, false, false
	if f.hdrsIn && !f.hdrsOut {
		s.releaseHeaders(f)
	}
	if len(f.body) > 0 || len(f.held) > 0 {
		s.releaseBody(f, append(f.body, f.held...), false)
		f.body, f.held = nil, nil
	}
	if f.trlIn {
		s.releaseTrailers(f)
	} else if f.eosIn && f.hdrsIn {
		s.finish(f)
	}
}

// Release helpers: output goes to the caller, or into the local reply being encoded.

func (s *Stream) releaseHeaders(f *flow) {
	if f.hdrsOut {
		return
	}
	f.hdrsOut = true
	if s.shareReleased {
		f.out.Headers = f.hdrs[:len(f.hdrs):len(f.hdrs)]
	} else {
		f.out.Headers = f.hdrs.Clone()
	}
	if f.hdrsEOS {
		s.finish(f)
	}
}

func (s *Stream) releaseBody(f *flow, b []byte, eos bool) {
	if !f.hdrsOut {
		s.releaseHeaders(f)
	}
	f.out.Body = append(f.out.Body, b...)
	if eos {
		s.finish(f)
	}
}

// releaseOwnedBody is releaseBody for a buffer nothing else refers to (the filter's body
// buffer once it is let go): the output takes it instead of a copy when it holds nothing yet.
func (s *Stream) releaseOwnedBody(f *flow, b []byte, eos bool) {
	if f.out.Body == nil && len(b) > 0 {
		if !f.hdrsOut {
			s.releaseHeaders(f)
		}
		f.out.Body = b
		if eos {
			s.finish(f)
		}
		return
	}
	s.releaseBody(f, b, eos)
}

func (s *Stream) releaseTrailers(f *flow) {
	if !f.hdrsOut {
		s.releaseHeaders(f)
	}
	f.out.Trailers = f.trl.Clone()
	s.finish(f)
}

func (s *Stream) finish(f *flow) {
	if f.done {
		return
	}
	f.done = true
	f.out.EndOfStream = true
	f.mapAvail, f.trlAvail, f.bodyAvail = false, false, false
	if f == &s.resp && s.replied && s.reply == nil {
		s.completeReply()
	}
	s.signal()
}

// checkLimit answers 413 (request) or 500 (response) when the filter makes Envoy buffer more
// than the buffer limit.
func (s *Stream) checkLimit(f *flow) bool {
	if len(f.body)+len(f.held) <= s.host.opts.BufferLimit {
		return true
	}
	if f == &s.req {
		s.sendLocalReply(LocalReply{Status: 413, Body: []byte("Payload Too Large"), Details: "request_payload_too_large", GRPCStatus: -1}, true)
	} else {
		s.sendLocalReply(LocalReply{Status: 500, Body: []byte("Internal Server Error"), Details: "response_payload_too_large", GRPCStatus: -1}, true)
	}
	return false
}

// newRequestID is a random (version 4) UUID, formatted in place: one allocation.
func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	var out [36]byte
	hex.Encode(out[0:8], b[0:4])
	hex.Encode(out[9:13], b[4:6])
	hex.Encode(out[14:18], b[6:8])
	hex.Encode(out[19:23], b[8:10])
	hex.Encode(out[24:36], b[10:16])
	out[8], out[13], out[18], out[23] = '-', '-', '-', '-'
	return string(out[:])
}

// replyHeaders builds the headers of a local reply as Envoy's sendLocalReply does: :status,
// the filter's extra headers, then content-length and content-type for a non-empty body.
func replyHeaders(r LocalReply) Headers {
	h := Headers{{Name: ":status", Value: strconv.Itoa(r.Status)}}
	h = append(h, r.Headers...)
	if len(r.Body) > 0 {
		h.replace("content-length", strconv.Itoa(len(r.Body)))
		if !h.Has("content-type") {
			h.add("content-type", "text/plain")
		}
	}
	return h
}
