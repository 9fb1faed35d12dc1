package abi

import (
	"runtime/debug"
	"slices"
	"strconv"
	"time"

	"github.com/mcpmesh/gateway/filter/plugin"
)

// Root is the plugin's root object as the ABI layer drives it; *plugin.Filter implements it.
type Root interface {
	// Configure receives the plugin configuration (buffer type 7) in proxy_on_configure.
	Configure(config []byte) error
	// NewStream returns the handler of one HTTP stream context.
	NewStream(h plugin.StreamHost) plugin.Stream
}

// NewRootFunc creates the plugin root of a new root context.
type NewRootFunc func(h plugin.RootHost) Root

// failClosedBody is the body of the 500 answer to a stream the filter could not handle.
var failClosedBody = []byte("gateway filter error\n")

var failClosedHeaders = []plugin.Header{{Name: "content-type", Value: "text/plain; charset=utf-8"}}

// rootContext is one plugin (root) context.
type rootContext struct {
	id         uint32
	host       *RootHost
	root       Root // nil when creating it failed
	configured bool // the last proxy_on_configure succeeded
}

// streamContext is one HTTP stream context.
type streamContext struct {
	id, rootID uint32
	host       StreamHost
	stream     plugin.Stream // nil when creating it failed

	failed          bool // creating or running the plugin failed; it is not called again
	localReplied    bool // the stream has been answered locally (or reset)
	responseStarted bool // response headers have gone downstream: no local response possible
	mutationFailed  bool // the host refused a request-header change: never continue upstream
	ended           bool // OnDone has run; nothing is delivered any more

	calls []uint32 // pending http_call ids, to forget them when the stream ends

	// reqHeaders holds the request headers the plugin reads first (StreamHost.RequestHeaders),
	// when they fit: one allocation less per stream. Later reads allocate, so that no slice
	// handed out ever changes.
	reqHeaders      [streamHeaders]plugin.Header
	reqHeadersTaken bool
}

// streamHeaders is how many request headers a stream context holds without an allocation:
// those of a typical MCP request through Envoy.
const streamHeaders = 24

type callKey struct{ root, call uint32 }

type pendingCall struct {
	stream uint32
	fn     func(plugin.CallResponse)
}

// vm is the guest-side state of one wasm VM: its contexts and pending http calls. Every
// export of the module calls exactly one vm method, and every vm method recovers from panics.
type vm struct {
	h       proxyHost
	now     func() time.Time
	newRoot NewRootFunc

	// roots holds the root contexts: one per plugin configuration of the VM, so a slice
	// searched in order is the cheapest table for them.
	roots   []*rootContext
	streams streamTable
	// last is the stream context found last. Envoy makes several callbacks in a row for one
	// stream, and in the wasm build even a table lookup costs a noticeable part of a short
	// callback.
	last *streamContext
	// http_call ids are issued per root context, so the key holds both.
	calls map[callKey]pendingCall

	// headerBuf is where the header maps the guest hands to the host (local responses, http
	// calls) are serialized: one buffer for all of them instead of an allocation each. The
	// host reads (copies) a map during the call that receives it and never after, so the
	// buffer is free again when the call returns. Each serialization overwrites it from the
	// start and the host is given that serialization's length only: nothing of an earlier
	// stream's map (a check call carries the user's bearer token) reaches the host again.
	headerBuf []byte

	// yield, when set, hands the thread to the Go scheduler; it is called once every
	// yieldEvery deleted streams (see yieldEvery). It is set at proxy_on_vm_start only when
	// the host's poll_oneoff works; yieldProbed records that the host has been asked.
	yield       func()
	yieldProbed bool
	deleted     uint64 // stream contexts deleted so far
}

// maxHeaderBuf is the largest serialization buffer vm.headerBuf keeps between calls; a
// larger map gets a buffer of its own, so that one huge map does not stay allocated.
const maxHeaderBuf = 4 << 10

// headerMap serializes hs into v.headerBuf for one host call (see headerBuf).
func (v *vm) headerMap(hs []plugin.Header) []byte {
	b := AppendHeaderMap(v.headerBuf[:0], hs)
	if cap(b) <= maxHeaderBuf {
		v.headerBuf = b
	}
	return b
}

// yieldEvery is how many stream contexts the VM deletes between two yields to the Go
// scheduler. In a wasm reactor the runtime's other goroutines — the garbage collector's
// background mark worker, and the scheduler pass that updates the GC CPU limiter — run only
// while an export yields. Without yields a collection advances through allocation assists
// alone, and once the limiter has turned assists off (a busy host stretching the measured
// assist times, or GOMEMLIMIT) nothing turns them on again: the cycle never ends and the heap
// grows without bound (BENCHMARKS.md, "Memory per VM"). A yield every 64 streams bounds that
// to the garbage of 64 streams, at a cost of one scheduler pass per 64 streams.
const yieldEvery = 64

func newVM(h proxyHost, now func() time.Time, newRoot NewRootFunc) *vm {
	return &vm{
		h:       h,
		now:     now,
		newRoot: newRoot,
		calls:   make(map[callKey]pendingCall),
	}
}

func itoa(v uint32) string { return strconv.FormatUint(uint64(v), 10) }

func (v *vm) logf(level plugin.LogLevel, msg string) { v.h.log(uint32(level), msg) }

// panicked logs a recovered panic value at critical level with the stack.
func (v *vm) panicked(where string, id uint32, r any) {
	v.logf(plugin.LogCritical, "panic in "+where+" (context "+itoa(id)+"): "+panicString(r)+"\n"+string(debug.Stack()))
}

// panicString describes a recovered value without fmt; a value whose Error or String method
// panics itself is described generically.
func panicString(r any) (s string) {
	defer func() {
		if recover() != nil {
			s = "unprintable panic value"
		}
	}()
	switch x := r.(type) {
	case error:
		return x.Error()
	case string:
		return x
	case interface{ String() string }:
		return x.String()
	default:
		return "non-error panic value"
	}
}

// stream returns the stream context id, or nil.
func (v *vm) stream(id uint32) *streamContext {
	if v.last != nil && v.last.id == id {
		return v.last
	}
	s := v.streams.get(id)
	if s != nil {
		v.last = s
	}
	return s
}

// forget removes the stream context id.
func (v *vm) forget(id uint32) {
	v.streams.remove(id)
	if v.last != nil && v.last.id == id {
		v.last = nil
	}
}

// root returns the root context id, or nil.
func (v *vm) root(id uint32) *rootContext {
	for _, rc := range v.roots {
		if rc.id == id {
			return rc
		}
	}
	return nil
}

// removeRoot removes the root context id and reports whether it was there.
func (v *vm) removeRoot(id uint32) bool {
	for i, rc := range v.roots {
		if rc.id == id {
			v.roots = slices.Delete(v.roots, i, i+1)
			return true
		}
	}
	return false
}

// contextCreate handles proxy_on_context_create. A parent of 0 makes a root context.
func (v *vm) contextCreate(id, parent uint32) {
	defer func() {
		if r := recover(); r != nil {
			v.panicked("proxy_on_context_create", id, r)
			if s := v.stream(id); s != nil {
				s.failed = true
			}
		}
	}()
	if parent == 0 {
		rc := &rootContext{id: id, host: &RootHost{h: v.h, now: v.now}}
		v.removeRoot(id) // a host that reuses a live id replaces the context, as a map would
		v.roots = append(v.roots, rc)
		if v.newRoot == nil {
			v.logf(plugin.LogCritical, "no plugin registered for root context "+itoa(id))
			return
		}
		rc.root = v.newRoot(rc.host)
		return
	}
	s := &streamContext{id: id, rootID: parent}
	s.host = StreamHost{RootHost: RootHost{h: v.h, now: v.now}, vm: v, s: s}
	// A host that reuses the id of a live stream replaces it. The old stream ends first, as
	// if the host had deleted it: its pending calls are forgotten, so that no answer to one
	// runs its callback on the new stream (continuing, or setting the assertion of, another
	// request), and the plugin releases what it held (OnDone).
	v.endStream(id, "proxy_on_context_create", true)
	v.streams.put(s)
	v.last = s
	rc := v.root(parent)
	switch {
	case rc == nil:
		v.logf(plugin.LogCritical, "stream context "+itoa(id)+" has unknown root context "+itoa(parent))
		s.failed = true
	case rc.root == nil || !rc.configured:
		v.logf(plugin.LogCritical, "stream context "+itoa(id)+": plugin is not configured")
		s.failed = true
	default:
		s.stream = rc.root.NewStream(&s.host)
		if s.stream == nil {
			v.logf(plugin.LogCritical, "stream context "+itoa(id)+": plugin returned no stream")
			s.failed = true
		}
	}
}

// vmStart handles proxy_on_vm_start. The VM configuration is not used.
func (v *vm) vmStart(rootID uint32) bool { return true }

// configure handles proxy_on_configure: it reads the plugin configuration and hands it to
// the root's Configure. Any failure is logged and returns false, which makes the host reject
// the plugin; streams of an unconfigured root are refused.
func (v *vm) configure(rootID uint32, size int32) (ok bool) {
	rc := v.root(rootID)
	defer func() {
		if r := recover(); r != nil {
			v.panicked("proxy_on_configure", rootID, r)
			ok = false
		}
		if rc != nil {
			rc.configured = ok
		}
	}()
	if rc == nil {
		v.logf(plugin.LogError, "configure: unknown root context "+itoa(rootID))
		return false
	}
	if rc.root == nil {
		v.logf(plugin.LogError, "configure: root context "+itoa(rootID)+" has no plugin")
		return false
	}
	var config []byte
	if size > 0 {
		b, st := v.h.getBufferBytes(BufferPluginConfiguration, 0, uint32(size))
		if st != StatusOK {
			v.logf(plugin.LogError, "configure: read plugin configuration: "+st.Error())
			return false
		}
		config = b
	}
	if err := rc.root.Configure(config); err != nil {
		v.logf(plugin.LogError, "configure plugin: "+err.Error())
		return false
	}
	return true
}

// requestCallback runs a request-side stream callback behind the panic boundary. Anything
// that goes wrong ends in a 500 answer and Pause: the request never reaches the upstream.
func (v *vm) requestCallback(id uint32, where string, call func(plugin.Stream) plugin.Action) (act plugin.Action) {
	s := v.stream(id)
	defer func() {
		if r := recover(); r != nil {
			v.panicked(where, id, r)
			if s != nil {
				s.failed = true
				v.failClosed(s)
			}
			act = plugin.Pause
		}
	}()
	if s == nil {
		v.logf(plugin.LogCritical, where+": unknown stream context "+itoa(id))
		v.h.sendLocalResponse(500, "", failClosedBody, v.headerMap(failClosedHeaders), grpcStatusNone)
		return plugin.Pause
	}
	if s.ended {
		return plugin.Pause
	}
	if s.failed || s.mutationFailed {
		v.failClosed(s)
		return plugin.Pause
	}
	if s.localReplied {
		return plugin.Pause
	}
	if call(s.stream) != plugin.Continue || s.localReplied {
		return plugin.Pause
	}
	if s.mutationFailed {
		v.failClosed(s)
		return plugin.Pause
	}
	return plugin.Continue
}

// responseCallback runs a response-side stream callback behind the panic boundary. A failed
// stream's response (usually its own 500) passes untouched.
func (v *vm) responseCallback(id uint32, where string, headers bool, call func(plugin.Stream) plugin.Action) (act plugin.Action) {
	s := v.stream(id)
	defer func() {
		if r := recover(); r != nil {
			v.panicked(where, id, r)
			if s != nil {
				s.failed = true
				v.failClosed(s)
			}
			act = plugin.Pause
		}
	}()
	if s == nil {
		v.logf(plugin.LogError, where+": unknown stream context "+itoa(id))
		return plugin.Continue
	}
	if !headers {
		s.responseStarted = true
	}
	if s.ended || s.failed {
		return plugin.Continue
	}
	if call(s.stream) != plugin.Continue {
		return plugin.Pause
	}
	if headers {
		s.responseStarted = true
	}
	return plugin.Continue
}

func (v *vm) requestHeaders(id uint32, n int32, eos bool) plugin.Action {
	return v.requestCallback(id, "proxy_on_request_headers", func(s plugin.Stream) plugin.Action {
		return s.OnRequestHeaders(int(n), eos)
	})
}

func (v *vm) requestBody(id uint32, size int32, eos bool) plugin.Action {
	return v.requestCallback(id, "proxy_on_request_body", func(s plugin.Stream) plugin.Action {
		return s.OnRequestBody(int(size), eos)
	})
}

func (v *vm) requestTrailers(id uint32, n int32) plugin.Action {
	return v.requestCallback(id, "proxy_on_request_trailers", func(s plugin.Stream) plugin.Action {
		return s.OnRequestTrailers(int(n))
	})
}

func (v *vm) responseHeaders(id uint32, n int32, eos bool) plugin.Action {
	return v.responseCallback(id, "proxy_on_response_headers", true, func(s plugin.Stream) plugin.Action {
		return s.OnResponseHeaders(int(n), eos)
	})
}

func (v *vm) responseBody(id uint32, size int32, eos bool) plugin.Action {
	return v.responseCallback(id, "proxy_on_response_body", false, func(s plugin.Stream) plugin.Action {
		return s.OnResponseBody(int(size), eos)
	})
}

// responseTrailers handles proxy_on_response_trailers: the plugin may hold a response body
// (a tool list) that the trailers end.
func (v *vm) responseTrailers(id uint32, n int32) plugin.Action {
	return v.responseCallback(id, "proxy_on_response_trailers", false, func(s plugin.Stream) plugin.Action {
		return s.OnResponseTrailers(int(n))
	})
}

// failClosed answers s with 500, or resets it when its response has already started.
func (v *vm) failClosed(s *streamContext) {
	if s.localReplied || s.ended {
		return
	}
	if s.responseStarted {
		s.localReplied = true
		if st := v.h.closeStream(StreamHTTPResponse); st != StatusOK {
			v.logf(plugin.LogError, "reset stream "+itoa(s.id)+": "+st.Error())
		}
		return
	}
	v.sendLocalResponse(s, 500, failClosedHeaders, failClosedBody)
}

// sendLocalResponse answers s locally. If the host refuses, the stream is reset instead.
func (v *vm) sendLocalResponse(s *streamContext, status int, headers []plugin.Header, body []byte) {
	if s.ended {
		return
	}
	if status < 100 || status > 599 {
		status = 500
	}
	s.localReplied = true
	st := v.h.sendLocalResponse(uint32(status), "", body, v.headerMap(headers), grpcStatusNone)
	if st == StatusOK {
		return
	}
	v.logf(plugin.LogError, "send local response on stream "+itoa(s.id)+": "+st.Error()+"; resetting it")
	if st := v.h.closeStream(StreamHTTPResponse); st != StatusOK {
		v.logf(plugin.LogError, "reset stream "+itoa(s.id)+": "+st.Error())
	}
}

// addCall records a dispatched http call of stream s.
func (v *vm) addCall(s *streamContext, callID uint32, fn func(plugin.CallResponse)) {
	v.calls[callKey{root: s.rootID, call: callID}] = pendingCall{stream: s.id, fn: fn}
	s.calls = append(s.calls, callID)
}

// httpCallResponse handles proxy_on_http_call_response. The response is read while the root
// context is still the effective one (the host attaches it there), then the stream that
// dispatched the call becomes the effective context and its callback runs. Calls of ended
// streams are dropped.
func (v *vm) httpCallResponse(rootID, callID uint32, numHeaders, bodySize, numTrailers int32) {
	k := callKey{root: rootID, call: callID}
	c, ok := v.calls[k]
	if !ok {
		v.logf(plugin.LogDebug, "http call response for unknown call "+itoa(callID)+" on root context "+itoa(rootID))
		return
	}
	delete(v.calls, k)
	s := v.stream(c.stream)
	effective := false // the stream is the effective context: a 500 would reach it
	defer func() {
		if r := recover(); r != nil {
			v.panicked("proxy_on_http_call_response", c.stream, r)
			if s == nil {
				return
			}
			s.failed = true
			if effective || v.h.setEffectiveContext(s.id) == StatusOK {
				v.failClosed(s)
			}
		}
	}()
	if s == nil || s.ended {
		return
	}
	for i, id := range s.calls {
		if id == callID {
			s.calls = append(s.calls[:i], s.calls[i+1:]...)
			break
		}
	}
	if s.failed || c.fn == nil {
		return
	}
	resp := v.readCallResponse(numHeaders, bodySize)
	if st := v.h.setEffectiveContext(s.id); st != StatusOK {
		v.logf(plugin.LogWarn, "http call response: set effective context "+itoa(s.id)+": "+st.Error())
		return
	}
	effective = true
	c.fn(resp)
}

// readCallResponse reads the current http call response; zero headers means the call failed.
func (v *vm) readCallResponse(numHeaders, bodySize int32) plugin.CallResponse {
	failed := plugin.CallResponse{Failed: true}
	if numHeaders <= 0 {
		return failed
	}
	b, st := v.h.getHeaderMapPairs(MapHTTPCallResponseHeaders)
	if st != StatusOK {
		v.logf(plugin.LogError, "http call response: read headers: "+st.Error())
		return failed
	}
	hs, err := parseOwnedHeaderMap(nil, b)
	if err != nil {
		v.logf(plugin.LogError, "http call response: "+err.Error())
		return failed
	}
	var body []byte
	if bodySize > 0 {
		if bodySize > maxAllocation {
			v.logf(plugin.LogError, "http call response: body of "+itoa(uint32(bodySize))+" bytes is too large")
			return failed
		}
		body, st = v.h.getBufferBytes(BufferHTTPCallResponseBody, 0, uint32(bodySize))
		if st != StatusOK {
			v.logf(plugin.LogError, "http call response: read body: "+st.Error())
			return failed
		}
	}
	return plugin.CallResponse{Headers: hs, Body: body}
}

// finish ends stream s once: it runs the plugin's OnDone and forgets its pending calls.
func (v *vm) finish(s *streamContext) {
	if s.ended {
		return
	}
	s.ended = true
	for _, id := range s.calls {
		delete(v.calls, callKey{root: s.rootID, call: id})
	}
	s.calls = nil
	if s.stream != nil {
		s.stream.OnDone()
	}
}

// done handles proxy_on_done. Streams finish at the first of proxy_on_log, proxy_on_done and
// proxy_on_delete, whatever order the host uses.
func (v *vm) done(id uint32) bool {
	v.endStream(id, "proxy_on_done", false)
	return true
}

// log handles proxy_on_log.
func (v *vm) log(id uint32) { v.endStream(id, "proxy_on_log", false) }

// delete handles proxy_on_delete and forgets the context.
func (v *vm) delete(id uint32) {
	if v.stream(id) != nil {
		v.deleted++
		defer v.maybeYield()
	}
	v.endStream(id, "proxy_on_delete", true)
	if v.removeRoot(id) {
		for k := range v.calls {
			if k.root == id {
				delete(v.calls, k)
			}
		}
	}
}

// probeYield sets v.yield from probe (which asks the host, once per VM, whether the VM may
// yield; nil means it may not): the first proxy_on_vm_start asks, later ones do not.
func (v *vm) probeYield(probe func() func()) {
	if !v.yieldProbed {
		v.yieldProbed, v.yield = true, probe()
	}
}

// maybeYield calls v.yield once every yieldEvery deleted streams, after the stream has been
// forgotten, so that nothing of it is reachable during the collection work the yield runs.
func (v *vm) maybeYield() {
	if v.yield != nil && v.deleted%yieldEvery == 0 {
		v.yield()
	}
}

func (v *vm) endStream(id uint32, where string, forget bool) {
	s := v.stream(id)
	if s == nil {
		return
	}
	if forget {
		v.forget(id)
	}
	if s.ended {
		return // the second and third of proxy_on_done, proxy_on_log, proxy_on_delete
	}
	defer func() {
		if r := recover(); r != nil {
			v.panicked(where, id, r)
		}
	}()
	v.finish(s)
}
