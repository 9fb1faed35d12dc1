package plugintest

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/filter/plugin"
)

// Now is the fixed clock of native runs.
var Now = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// NativeHost is an in-process stand-in for the proxy: one root plus the stream in flight.
// It answers check calls with AnswerCheck after the callback that made them returns, the
// way a proxy delivers proxy_on_http_call_response in a later callback.
type NativeHost struct {
	Logs     []string
	Counters map[string]int64
	// CheckHeaders are the headers of the last check call.
	CheckHeaders Headers
	// Props are the properties the stream in flight set (proxy_set_property).
	Props map[string]string
	names []string
	Clock time.Time
	// Level is the log level; the zero value, LogTrace, keeps every message.
	Level plugin.LogLevel
	// shared is the proxy's shared data (SharedData).
	shared map[string][]byte
}

// NewNativeHost returns a host with an empty log.
func NewNativeHost() *NativeHost {
	return &NativeHost{Counters: map[string]int64{}, Clock: Now}
}

// Log records a copy of a log line at Level or above (plugin.RootHost: the caller may reuse
// msg's bytes).
func (h *NativeHost) Log(level plugin.LogLevel, msg string) {
	if level >= h.Level {
		h.Logs = append(h.Logs, strings.Clone(msg))
	}
}

// LogLevel returns Level.
func (h *NativeHost) LogLevel() plugin.LogLevel { return h.Level }

// Now returns the host clock.
func (h *NativeHost) Now() time.Time { return h.Clock }

// DefineCounter defines a counter.
func (h *NativeHost) DefineCounter(name string) (uint32, error) {
	h.names = append(h.names, name)
	return uint32(len(h.names) - 1), nil
}

// SharedData reads the shared data of the filter's streams.
func (h *NativeHost) SharedData(key string) ([]byte, uint32, bool) {
	v, ok := h.shared[key]
	return v, 1, ok
}

// SetSharedData stores shared data (CAS is not modelled: every store succeeds).
func (h *NativeHost) SetSharedData(key string, value []byte, _ uint32) bool {
	if h.shared == nil {
		h.shared = map[string][]byte{}
	}
	h.shared[key] = append([]byte(nil), value...)
	return true
}

// IncrementCounter adds to a counter.
func (h *NativeHost) IncrementCounter(id uint32, delta int64) {
	if int(id) < len(h.names) {
		h.Counters[h.names[id]] += delta
	}
}

// NativeFilter is a configured plugin.Filter on a NativeHost.
type NativeFilter struct {
	Host   *NativeHost
	Filter *plugin.Filter
}

// NewNativeFilter configures a filter with Config.
func NewNativeFilter() (*NativeFilter, error) {
	h := NewNativeHost()
	f := plugin.New(h)
	if err := f.Configure(Config()); err != nil {
		return nil, err
	}
	return &NativeFilter{Host: h, Filter: f}, nil
}

type call struct {
	headers []plugin.Header
	body    []byte
	cb      func(plugin.CallResponse)
}

// nativeStream implements plugin.StreamHost for one request.
type nativeStream struct {
	*NativeHost
	headers     []plugin.Header
	body        []byte
	reply       *Result
	continued   bool
	continues   int
	respHeaders []plugin.Header
	respBody    []byte // the response body the filter holds
	// headersGone: the headers went on; their map is no longer reachable.
	headersGone      bool
	lateHeaderWrites int
	calls            []call
	nCalls           int
	// lean: Drive's stream, which does not store the properties set and keeps only a local
	// reply's status.
	lean bool
}

func (s *nativeStream) RequestHeader(name string) (string, bool) {
	if s.headersGone {
		return "", false // Envoy drops its request header map once the headers continued
	}
	for _, h := range s.headers {
		if h.Name == name {
			return h.Value, true
		}
	}
	return "", false
}
func (s *nativeStream) RequestHeaders() []plugin.Header { return s.headers }
func (s *nativeStream) SetRequestHeader(name, value string) {
	if s.headersGone {
		s.lateHeaderWrites++
		return
	}
	s.RemoveRequestHeader(name)
	s.headers = append(s.headers, plugin.Header{Name: name, Value: value})
}
func (s *nativeStream) RemoveRequestHeader(name string) {
	if s.headersGone {
		s.lateHeaderWrites++
		return
	}
	kept := s.headers[:0]
	for _, h := range s.headers {
		if h.Name != name {
			kept = append(kept, h)
		}
	}
	s.headers = kept
}
func (s *nativeStream) RequestBody(size int) []byte {
	if size > len(s.body) {
		size = len(s.body)
	}
	return s.body[:size]
}
func (s *nativeStream) ResponseHeaders() []plugin.Header { return s.respHeaders }
func (s *nativeStream) ResponseBody(size int) []byte {
	return s.respBody[:min(size, len(s.respBody))]
}
func (s *nativeStream) ReplaceResponseBody(size int, body []byte) bool {
	if size > len(s.respBody) {
		return false
	}
	s.respBody = append(append([]byte(nil), body...), s.respBody[size:]...)
	return true
}
func (s *nativeStream) SetResponseHeader(name, value string) {
	s.RemoveResponseHeader(name)
	s.respHeaders = append(s.respHeaders, plugin.Header{Name: name, Value: value})
}
func (s *nativeStream) RemoveResponseHeader(name string) {
	kept := s.respHeaders[:0]
	for _, h := range s.respHeaders {
		if h.Name != name {
			kept = append(kept, h)
		}
	}
	s.respHeaders = kept
}
func (s *nativeStream) AddResponseHeader(name, value string) {
	s.respHeaders = append(s.respHeaders, plugin.Header{Name: name, Value: value})
}
func (s *nativeStream) Property(path ...string) ([]byte, bool) {
	if strings.Join(path, ".") == "request.id" {
		return []byte(RequestID), true
	}
	return nil, false
}
func (s *nativeStream) SetProperty(path string, value []byte) bool {
	if s.lean {
		return true // the value is the filter's; nothing here reads it back
	}
	if s.Props == nil {
		s.Props = map[string]string{}
	}
	s.Props[path] = string(value)
	return true
}
func (s *nativeStream) SendLocalResponse(status int, headers []plugin.Header, body []byte) {
	if s.reply != nil {
		panic("plugintest: second local reply on one stream")
	}
	if s.lean {
		s.reply = &Result{Status: status}
		return
	}
	r := &Result{Status: status, Body: string(body), ReplyHeaders: map[string]string{}}
	for _, h := range headers {
		r.ReplyHeaders[h.Name] = h.Value
	}
	s.reply = r
}
func (s *nativeStream) ContinueRequest() { s.continued = true; s.continues++ }
func (s *nativeStream) DispatchHTTPCall(cluster string, headers []plugin.Header, body []byte, _ uint32, cb func(plugin.CallResponse)) error {
	if cluster != Cluster {
		return errors.New("unknown cluster " + cluster)
	}
	s.nCalls++
	s.CheckHeaders = Headers{}
	for _, h := range headers {
		s.CheckHeaders = append(s.CheckHeaders, [2]string{h.Name, h.Value})
	}
	s.calls = append(s.calls, call{headers: headers, body: append([]byte(nil), body...), cb: cb})
	return nil
}

// deliver answers the pending check calls with answer.
func (s *nativeStream) deliver(answer func(key string, body []byte) CheckAnswer) {
	for len(s.calls) > 0 {
		c := s.calls[0]
		s.calls = s.calls[1:]
		var key string
		for _, h := range c.headers {
			if h.Name == "x-gateway-filter-key" {
				key = h.Value
			}
		}
		a := answer(key, c.body)
		if a.Fail {
			c.cb(plugin.CallResponse{Failed: true})
			continue
		}
		c.cb(plugin.CallResponse{Headers: []plugin.Header{{Name: ":status", Value: strconv.Itoa(a.Status)}}, Body: []byte(a.Body)})
	}
}

// Native is the Runner of the filter's Go logic: each case on a NativeFilter of its own.
func Native(t testing.TB, c Case, m Mode) Result {
	t.Helper()
	nf, err := NewNativeFilter()
	if err != nil {
		t.Fatal(err)
	}
	return nf.RunCase(c, m)
}

// Run sends one request through the filter the way Envoy does by default, check calls
// answered by AnswerCheck.
func (nf *NativeFilter) Run(req Request) Result { return nf.send(Case{Request: req}, false) }

// RunCase runs c's Before requests, then its Request, on nf in mode m.
func (nf *NativeFilter) RunCase(c Case, m Mode) Result {
	session := ""
	for _, b := range c.Before {
		r := nf.send(Case{Request: b, Response: c.BeforeResponse, ResponseBody: c.BeforeResponseBody}, m.HeadersStop)
		if id, ok := ClientSession(r); ok {
			session = id
		}
	}
	c.Request = WithSession(c.Request, session)
	return nf.send(c, m.HeadersStop)
}

// send sends c.Request through the filter, with c's trailers, check answers and upstream
// response, the way Envoy does: by default a filter whose request-headers callback paused
// receives no body (nor trailers) until it continues the stream; with headersStop
// (allow_on_headers_stop_iteration) the body arrives meanwhile and check answers only after
// it (the slowest token service).
func (nf *NativeFilter) send(c Case, headersStop bool) Result {
	before := make(map[string]int64, len(nf.Host.Counters))
	for k, v := range nf.Host.Counters {
		before[k] = v
	}
	nf.Host.Props, nf.Host.CheckHeaders = nil, nil
	res := nf.sendStream(c, headersStop)
	res.Properties, res.CheckHeaders = nf.Host.Props, nf.Host.CheckHeaders
	res.Counters = map[string]int64{}
	for k, v := range nf.Host.Counters {
		if d := v - before[k]; d != 0 {
			res.Counters[k] = d
		}
	}
	return res
}

// streamEnd is how a stream driven by runStream ended, before anything is copied out of it.
type streamEnd struct {
	s              *nativeStream
	stuck          bool
	action         plugin.Action
	before         int             // s.continues before the last request callback
	early          []plugin.Header // the headers Envoy sent upstream with the trailers
	clientResponse Headers
	clientBody     []byte
	logStart       int
}

// forwarded reports whether the request went on to the upstream.
func (e *streamEnd) forwarded() bool {
	return e.early != nil || e.action == plugin.Continue || e.s.continues > e.before
}

// sendStream is send without the counters and properties.
func (nf *NativeFilter) sendStream(c Case, headersStop bool) Result {
	e := nf.runStream(c, headersStop, false)
	s := e.s
	if e.stuck {
		return Result{Stuck: true, CheckCalls: s.nCalls, Logs: nf.Host.Logs[e.logStart:]}
	}
	res := Result{CheckCalls: s.nCalls, Logs: append([]string(nil), nf.Host.Logs[e.logStart:]...), LateHeaderWrites: s.lateHeaderWrites,
		ClientResponse: e.clientResponse, ClientBody: string(e.clientBody)}
	if e.early != nil {
		res.Forwarded = true
		res.Upstream = map[string]string{}
		for _, h := range e.early {
			res.Upstream[h.Name] = h.Value
			res.UpstreamAll = append(res.UpstreamAll, [2]string{h.Name, h.Value})
		}
		return res
	}
	if s.reply != nil {
		res.Status, res.Body, res.ReplyHeaders = s.reply.Status, s.reply.Body, s.reply.ReplyHeaders
		return res
	}
	res.Forwarded = e.forwarded()
	res.Upstream = map[string]string{}
	for _, h := range s.headers {
		res.Upstream[h.Name] = h.Value
		res.UpstreamAll = append(res.UpstreamAll, [2]string{h.Name, h.Value})
	}
	return res
}

// Outcome is what Drive reports of a stream: what a benchmark checks on every iteration.
type Outcome struct {
	Forwarded  bool
	Status     int // of the local reply; 0 when there was none
	CheckCalls int
	// ClientBodyLen is the length of the response body the client received.
	ClientBodyLen int
	Stuck         bool
}

// Drive sends c's request (and c's upstream response, if any) through the filter as RunCase
// does in the default mode, for the plugin's benchmarks: it keeps no record of the stream
// (no counters before and after, no properties, no copies of headers, bodies or logs), so
// that a benchmark's loop measures the filter's logic and not this package's bookkeeping, as
// wasmtest/filtertest's drive does for filter.wasm. A benchmark runs the case through
// RunCase first and checks what it must; each iteration then checks the Outcome. c.Before
// is not sent.
func (nf *NativeFilter) Drive(c Case) Outcome {
	e := nf.runStream(c, false, true)
	o := Outcome{CheckCalls: e.s.nCalls, Stuck: e.stuck, ClientBodyLen: len(e.clientBody)}
	if e.stuck {
		return o
	}
	if e.s.reply != nil {
		o.Status = e.s.reply.Status
		return o
	}
	o.Forwarded = e.forwarded()
	return o
}

// runStream drives one stream through the filter the way Envoy does (see send). lean is
// Drive's mode: properties are not stored, a local reply keeps only its status, and
// the client's response headers are not copied out.
func (nf *NativeFilter) runStream(c Case, headersStop, lean bool) (e streamEnd) {
	req := c.Request
	answer := c.Answer
	if answer == nil {
		answer = AnswerCheck
	}
	e.logStart = len(nf.Host.Logs)
	s := &nativeStream{NativeHost: nf.Host, lean: lean}
	e.s = s
	s.headers = make([]plugin.Header, 0, 6+len(req.Headers))
	s.headers = append(s.headers, plugin.Header{Name: ":method", Value: req.Method}, plugin.Header{Name: ":path", Value: req.Path}, plugin.Header{Name: ":authority", Value: req.Authority}, plugin.Header{Name: ":scheme", Value: "https"}, plugin.Header{Name: "x-request-id", Value: RequestID})
	size := 0
	for _, ch := range req.Chunks {
		size += len(ch)
	}
	if len(req.Chunks) > 0 && !req.NoContentLength {
		s.headers = append(s.headers, plugin.Header{Name: "content-length", Value: strconv.Itoa(size)})
	}
	for _, h := range req.Headers {
		s.headers = append(s.headers, plugin.Header{Name: h[0], Value: h[1]})
	}
	trailers := len(c.Trailers) > 0
	st := nf.Filter.NewStream(s)
	e.action = st.OnRequestHeaders(len(s.headers), len(req.Chunks) == 0 && !trailers)
	headersHeld := e.action == plugin.Pause
	s.headersGone = !headersHeld || s.continued
	if !headersStop {
		s.deliver(answer)
	}
	for i, ch := range req.Chunks {
		if s.reply != nil {
			break
		}
		if headersHeld && !s.continued && !headersStop {
			st.OnDone()
			e.stuck = true
			return e
		}
		s.headersGone = s.headersGone || s.continued
		s.body = append(s.body, ch...)
		e.before = s.continues
		e.action = st.OnRequestBody(len(s.body), i == len(req.Chunks)-1 && !trailers)
		if !headersStop {
			s.deliver(answer)
		}
	}
	if trailers && s.reply == nil {
		if headersHeld && !s.continued && !headersStop {
			st.OnDone()
			e.stuck = true
			return e
		}
		e.before = s.continues
		e.action = st.OnRequestTrailers(len(c.Trailers))
		if e.action == plugin.Continue && s.reply == nil && !s.continued {
			// Envoy continues the paused headers with the trailers: the request goes
			// upstream as it is now, whatever the filter does later.
			e.early = append([]plugin.Header(nil), s.headers...)
			s.headersGone = true
		}
	}
	s.deliver(answer)
	if s.reply == nil && e.forwarded() && c.Response != nil {
		s.respHeaders = nil
		for _, h := range c.Response {
			s.respHeaders = append(s.respHeaders, plugin.Header{Name: h[0], Value: h[1]})
		}
		trailers := len(c.ResponseTrailers) > 0
		st.OnResponseHeaders(len(s.respHeaders), len(c.ResponseBody) == 0 && !trailers)
		if !lean {
			e.clientResponse = Headers{}
			for _, h := range s.respHeaders {
				e.clientResponse = append(e.clientResponse, [2]string{h.Name, h.Value})
			}
		}
		// Envoy buffers what a response-body callback holds (StopIterationAndBuffer) and
		// hands the filter the whole buffer on the next chunk.
		for i, ch := range c.ResponseBody {
			s.respBody = append(s.respBody, ch...)
			if st.OnResponseBody(len(s.respBody), i == len(c.ResponseBody)-1 && !trailers) == plugin.Continue {
				e.clientBody = append(e.clientBody, s.respBody...)
				s.respBody = nil
			}
		}
		// Trailers: Envoy lets the filter read and replace the body it buffers, and
		// releases it when the trailers callback continues.
		if trailers && st.OnResponseTrailers(len(c.ResponseTrailers)) == plugin.Continue {
			e.clientBody = append(e.clientBody, s.respBody...)
			s.respBody = nil
		}
	}
	st.OnDone()
	return e
}
