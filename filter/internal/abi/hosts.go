package abi

import (
	"errors"
	"strconv"
	"time"

	"github.com/mcpmesh/gateway/filter/plugin"
)

// ErrStreamEnded is returned by StreamHost.DispatchHTTPCall once the stream has ended or
// failed: its response could never be delivered.
var ErrStreamEnded = errors.New("stream has ended")

// opError wraps a host-call failure with the operation that failed, without fmt.
type opError struct {
	op  string
	err error
}

func (e *opError) Error() string { return e.op + ": " + e.err.Error() }
func (e *opError) Unwrap() error { return e.err }

func wrap(op string, st Status) error {
	if st == StatusOK {
		return nil
	}
	return &opError{op: op, err: st}
}

// RootHost implements plugin.RootHost with proxy-wasm host calls. It acts on whichever context
// is current when a method runs (the host tracks it), so one RootHost serves a root context
// and, embedded in StreamHost, its streams.
type RootHost struct {
	h   proxyHost
	now func() time.Time
}

var _ plugin.RootHost = (*RootHost)(nil)

// Log writes msg to the proxy's log at level.
func (r *RootHost) Log(level plugin.LogLevel, msg string) { r.h.log(uint32(level), msg) }

// Now returns the proxy's clock (WASI clock_time_get in the wasm build).
func (r *RootHost) Now() time.Time { return r.now() }

// DefineCounter defines (or finds) a counter metric named name and returns its id.
func (r *RootHost) DefineCounter(name string) (uint32, error) {
	id, st := r.h.defineMetric(MetricCounter, name)
	if err := wrap("define metric "+name, st); err != nil {
		return 0, err
	}
	return id, nil
}

// IncrementCounter adds delta to the counter id. Failures are ignored: a metric must never
// change how a request is handled.
func (r *RootHost) IncrementCounter(id uint32, delta int64) { r.h.incrementMetric(id, delta) }

// SharedData reads the value stored under key in the proxy's shared data (shared by the VMs
// of the plugin's vm_id, on every worker thread), with its CAS token.
func (r *RootHost) SharedData(key string) ([]byte, uint32, bool) {
	v, cas, st := r.h.getSharedData(key)
	return v, cas, st == StatusOK
}

// SetSharedData stores value under key if cas is 0 or the current token, and reports whether
// it was stored.
func (r *RootHost) SetSharedData(key string, value []byte, cas uint32) bool {
	return r.h.setSharedData(key, value, cas) == StatusOK
}

// LogLevel returns the proxy's current log level for this plugin, or LogInfo if the host
// cannot say.
func (r *RootHost) LogLevel() plugin.LogLevel {
	l, st := r.h.getLogLevel()
	if st != StatusOK {
		return plugin.LogInfo
	}
	return plugin.LogLevel(l)
}

// StreamHost implements plugin.StreamHost for one HTTP stream context.
type StreamHost struct {
	RootHost
	vm *vm
	s  *streamContext
}

var _ plugin.StreamHost = (*StreamHost)(nil)

// RequestHeader returns the first value of the request header name (lower-case).
func (s *StreamHost) RequestHeader(name string) (string, bool) {
	v, st := s.h.getHeaderMapValue(MapHTTPRequestHeaders, name)
	if st != StatusOK {
		return "", false
	}
	return v, true
}

// RequestHeaders returns every request header, pseudo-headers included. A map the host
// serialized wrongly is logged and yields no headers.
func (s *StreamHost) RequestHeaders() []plugin.Header {
	var dst []plugin.Header
	if !s.s.reqHeadersTaken {
		s.s.reqHeadersTaken = true
		dst = s.s.reqHeaders[:0]
	}
	return s.headers(MapHTTPRequestHeaders, dst)
}

// ResponseHeaders returns every response header, ":status" included.
func (s *StreamHost) ResponseHeaders() []plugin.Header {
	return s.headers(MapHTTPResponseHeaders, nil)
}

// headers reads header map m, into dst's array if it has room.
func (s *StreamHost) headers(m MapType, dst []plugin.Header) []plugin.Header {
	b, st := s.h.getHeaderMapPairs(m)
	if st != StatusOK {
		return nil
	}
	hs, err := parseOwnedHeaderMap(dst, b)
	if err != nil {
		s.h.log(uint32(plugin.LogError), "read header map "+strconv.FormatUint(uint64(m), 10)+": "+err.Error())
		return nil
	}
	return hs
}

// SetRequestHeader replaces (or adds) a request header. If the host refuses, the stream can no
// longer be continued: it is answered with 500 instead (fail closed), because a header the
// plugin meant to strip might otherwise reach the upstream.
func (s *StreamHost) SetRequestHeader(name, value string) {
	if st := s.h.replaceHeaderMapValue(MapHTTPRequestHeaders, name, value); st != StatusOK {
		s.requestMutationFailed("set request header "+name, st)
	}
}

// RemoveRequestHeader removes every value of a request header. Failure is handled as in
// SetRequestHeader.
func (s *StreamHost) RemoveRequestHeader(name string) {
	st := s.h.removeHeaderMapValue(MapHTTPRequestHeaders, name)
	if st != StatusOK && st != StatusNotFound {
		s.requestMutationFailed("remove request header "+name, st)
	}
}

func (s *StreamHost) requestMutationFailed(op string, st Status) {
	s.s.mutationFailed = true
	s.h.log(uint32(plugin.LogError), op+": "+st.Error()+"; the request will be refused")
}

// RequestBody returns the request body buffered so far, up to size bytes, or nil if the host
// has none. Each call copies it into a new buffer, which nothing writes to again.
func (s *StreamHost) RequestBody(size int) []byte {
	if size <= 0 {
		return nil
	}
	if size > maxAllocation {
		size = maxAllocation
	}
	b, st := s.h.getBufferBytes(BufferHTTPRequestBody, 0, uint32(size))
	if st != StatusOK {
		return nil
	}
	return b
}

// ResponseBody returns the response body buffered so far, up to size bytes, or nil if the host
// has none.
func (s *StreamHost) ResponseBody(size int) []byte {
	if size <= 0 {
		return nil
	}
	if size > maxAllocation {
		size = maxAllocation
	}
	b, st := s.h.getBufferBytes(BufferHTTPResponseBody, 0, uint32(size))
	if st != StatusOK {
		return nil
	}
	return b
}

// ReplaceResponseBody replaces the first size bytes of the buffered response body with body.
// A refusal is logged and reported.
func (s *StreamHost) ReplaceResponseBody(size int, body []byte) bool {
	if st := s.h.setBufferBytes(BufferHTTPResponseBody, 0, uint32(size), body); st != StatusOK {
		s.h.log(uint32(plugin.LogWarn), "replace response body: "+st.Error())
		return false
	}
	return true
}

// SetResponseHeader replaces (or adds) a response header. A refusal is logged.
func (s *StreamHost) SetResponseHeader(name, value string) {
	if st := s.h.replaceHeaderMapValue(MapHTTPResponseHeaders, name, value); st != StatusOK {
		s.h.log(uint32(plugin.LogWarn), "set response header "+name+": "+st.Error())
	}
}

// RemoveResponseHeader removes every value of a response header. A refusal is logged.
func (s *StreamHost) RemoveResponseHeader(name string) {
	if st := s.h.removeHeaderMapValue(MapHTTPResponseHeaders, name); st != StatusOK && st != StatusNotFound {
		s.h.log(uint32(plugin.LogWarn), "remove response header "+name+": "+st.Error())
	}
}

// AddResponseHeader adds a value to a response header, keeping existing values. A refusal is
// logged.
func (s *StreamHost) AddResponseHeader(name, value string) {
	if st := s.h.addHeaderMapValue(MapHTTPResponseHeaders, name, value); st != StatusOK {
		s.h.log(uint32(plugin.LogWarn), "add response header "+name+": "+st.Error())
	}
}

// Property reads a proxy property; path holds its segments ("request", "path").
func (s *StreamHost) Property(path ...string) ([]byte, bool) {
	v, st := s.h.getProperty(PropertyPath(path...))
	if st != StatusOK {
		return nil, false
	}
	return v, true
}

// SetProperty publishes value under path for this stream (Envoy keeps it as the filter state
// "wasm.<path>", which access logs print with %FILTER_STATE(wasm.<path>:PLAIN)%). It reports
// whether the host took it; a refusal is not logged (a property never changes how a request
// is handled).
func (s *StreamHost) SetProperty(path string, value []byte) bool {
	return s.h.setProperty(path, value) == StatusOK
}

// SendLocalResponse answers the stream locally; the upstream is never contacted. A status
// outside 100–599 is sent as 500.
func (s *StreamHost) SendLocalResponse(status int, headers []plugin.Header, body []byte) {
	s.vm.sendLocalResponse(s.s, status, headers, body)
}

// ContinueRequest resumes a request paused by plugin.Pause. After a refused header mutation
// the stream is answered with 500 instead; after a local response it does nothing.
func (s *StreamHost) ContinueRequest() {
	if s.s.localReplied || s.s.ended {
		return
	}
	if s.s.mutationFailed {
		s.vm.failClosed(s.s)
		return
	}
	if st := s.h.continueStream(StreamHTTPRequest); st != StatusOK {
		s.h.log(uint32(plugin.LogError), "continue request: "+st.Error())
	}
}

// DispatchHTTPCall sends an HTTP request to the proxy cluster named cluster. headers must hold
// ":method", ":path" and ":authority". onResponse runs once, in the later
// proxy_on_http_call_response callback with this stream as the effective context, unless the
// stream has ended first.
func (s *StreamHost) DispatchHTTPCall(cluster string, headers []plugin.Header, body []byte, timeoutMillis uint32, onResponse func(plugin.CallResponse)) error {
	if s.s.ended || s.s.failed {
		return &opError{op: "dispatch http call to " + cluster, err: ErrStreamEnded}
	}
	id, st := s.h.httpCall(cluster, s.vm.headerMap(headers), body, nil, timeoutMillis)
	if err := wrap("dispatch http call to "+cluster, st); err != nil {
		return err
	}
	s.vm.addCall(s.s, id, onResponse)
	return nil
}
