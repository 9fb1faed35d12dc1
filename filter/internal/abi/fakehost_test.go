package abi

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/filter/plugin"
)

// fakeHost is a native proxyHost for unit tests: header maps, buffers and properties in Go
// maps, and a record of everything the guest asked for.
type fakeHost struct {
	shared    map[string][]byte
	logs      []logLine
	effective uint32
	// effectiveAt records the effective context each time a callback ran a stream function.
	effectiveSets []uint32

	maps    map[MapType][]plugin.Header
	rawMaps map[MapType][]byte // overrides maps when set (for malformed input)
	buffers map[BufferType][]byte
	props   map[string][]byte

	local []localResponse
	// handed holds a copy of every header map the guest handed over (local responses and
	// http calls), byte for byte.
	handed    [][]byte
	closed    []StreamType
	continued []StreamType

	nextCallID uint32
	calls      []dispatched

	metrics     map[string]uint32
	metricTypes map[uint32]MetricType
	counters    map[uint32]int64

	// fail forces a status for a host call named as in proxyHost ("replaceHeaderMapValue").
	fail map[string]Status
}

type logLine struct {
	level uint32
	msg   string
}

type localResponse struct {
	status  uint32
	body    string
	headers []plugin.Header
	grpc    int32
}

type dispatched struct {
	cluster string
	headers []plugin.Header
	body    string
	timeout uint32
	id      uint32
}

func newFakeHost() *fakeHost {
	return &fakeHost{
		maps:        map[MapType][]plugin.Header{},
		rawMaps:     map[MapType][]byte{},
		buffers:     map[BufferType][]byte{},
		props:       map[string][]byte{},
		nextCallID:  1,
		metrics:     map[string]uint32{},
		metricTypes: map[uint32]MetricType{},
		counters:    map[uint32]int64{},
		fail:        map[string]Status{},
	}
}

func (f *fakeHost) failed(name string) (Status, bool) {
	st, ok := f.fail[name]
	return st, ok
}

func (f *fakeHost) hasLog(level plugin.LogLevel, substr string) bool {
	for _, l := range f.logs {
		if l.level == uint32(level) && strings.Contains(l.msg, substr) {
			return true
		}
	}
	return false
}

func (f *fakeHost) header(m MapType, key string) (string, bool) {
	for _, h := range f.maps[m] {
		if h.Name == key {
			return h.Value, true
		}
	}
	return "", false
}

func (f *fakeHost) log(level uint32, msg string) Status {
	f.logs = append(f.logs, logLine{level, strings.Clone(msg)}) // the caller may reuse msg's bytes
	return StatusOK
}

func (f *fakeHost) getLogLevel() (uint32, Status) {
	if st, ok := f.failed("getLogLevel"); ok {
		return 0, st
	}
	return uint32(plugin.LogDebug), StatusOK
}

func (f *fakeHost) setEffectiveContext(id uint32) Status {
	if st, ok := f.failed("setEffectiveContext"); ok {
		return st
	}
	f.effective = id
	f.effectiveSets = append(f.effectiveSets, id)
	return StatusOK
}

func (f *fakeHost) getBufferBytes(t BufferType, start, maxSize uint32) ([]byte, Status) {
	if st, ok := f.failed("getBufferBytes"); ok {
		return nil, st
	}
	b, ok := f.buffers[t]
	if !ok {
		return nil, StatusNotFound
	}
	if start > uint32(len(b)) {
		return nil, StatusBadArgument
	}
	b = b[start:]
	if uint32(len(b)) > maxSize {
		b = b[:maxSize]
	}
	return append([]byte(nil), b...), StatusOK
}

func (f *fakeHost) setBufferBytes(t BufferType, start, size uint32, data []byte) Status {
	if st, ok := f.failed("setBufferBytes"); ok {
		return st
	}
	b, ok := f.buffers[t]
	if !ok {
		return StatusNotFound
	}
	if start != 0 || size > uint32(len(b)) {
		return StatusBadArgument
	}
	f.buffers[t] = append(append([]byte(nil), data...), b[size:]...)
	return StatusOK
}

func (f *fakeHost) getHeaderMapPairs(m MapType) ([]byte, Status) {
	if st, ok := f.failed("getHeaderMapPairs"); ok {
		return nil, st
	}
	if raw, ok := f.rawMaps[m]; ok {
		return raw, StatusOK
	}
	return AppendHeaderMap(nil, f.maps[m]), StatusOK
}

func (f *fakeHost) getHeaderMapValue(m MapType, key string) (string, Status) {
	if v, ok := f.header(m, key); ok {
		return v, StatusOK
	}
	return "", StatusNotFound
}

func (f *fakeHost) addHeaderMapValue(m MapType, key, value string) Status {
	if st, ok := f.failed("addHeaderMapValue"); ok {
		return st
	}
	f.maps[m] = append(f.maps[m], plugin.Header{Name: key, Value: value})
	return StatusOK
}

func (f *fakeHost) replaceHeaderMapValue(m MapType, key, value string) Status {
	if st, ok := f.failed("replaceHeaderMapValue"); ok {
		return st
	}
	f.removeHeaderMapValue(m, key)
	f.maps[m] = append(f.maps[m], plugin.Header{Name: key, Value: value})
	return StatusOK
}

func (f *fakeHost) removeHeaderMapValue(m MapType, key string) Status {
	if st, ok := f.failed("removeHeaderMapValue"); ok {
		return st
	}
	kept := f.maps[m][:0]
	for _, h := range f.maps[m] {
		if h.Name != key {
			kept = append(kept, h)
		}
	}
	f.maps[m] = kept
	return StatusOK
}

func (f *fakeHost) continueStream(s StreamType) Status {
	f.continued = append(f.continued, s)
	return StatusOK
}

func (f *fakeHost) closeStream(s StreamType) Status {
	f.closed = append(f.closed, s)
	return StatusOK
}

func (f *fakeHost) sendLocalResponse(status uint32, details string, body, headers []byte, grpcStatus int32) Status {
	if st, ok := f.failed("sendLocalResponse"); ok {
		return st
	}
	f.handed = append(f.handed, bytes.Clone(headers))
	hs, err := ParseHeaderMap(headers)
	if err != nil {
		return StatusBadArgument
	}
	f.local = append(f.local, localResponse{status: status, body: string(body), headers: hs, grpc: grpcStatus})
	return StatusOK
}

func (f *fakeHost) httpCall(cluster string, headers, body, trailers []byte, timeoutMillis uint32) (uint32, Status) {
	if st, ok := f.failed("httpCall"); ok {
		return 0, st
	}
	f.handed = append(f.handed, bytes.Clone(headers))
	hs, err := ParseHeaderMap(headers)
	if err != nil {
		return 0, StatusBadArgument
	}
	id := f.nextCallID
	f.nextCallID++
	f.calls = append(f.calls, dispatched{cluster: cluster, headers: hs, body: string(body), timeout: timeoutMillis, id: id})
	return id, StatusOK
}

func (f *fakeHost) getSharedData(key string) ([]byte, uint32, Status) {
	v, ok := f.shared[key]
	if !ok {
		return nil, 0, StatusNotFound
	}
	return v, 1, StatusOK
}

func (f *fakeHost) setSharedData(key string, value []byte, _ uint32) Status {
	if f.shared == nil {
		f.shared = map[string][]byte{}
	}
	f.shared[key] = append([]byte(nil), value...)
	return StatusOK
}

func (f *fakeHost) defineMetric(t MetricType, name string) (uint32, Status) {
	if id, ok := f.metrics[name]; ok {
		return id, StatusOK
	}
	id := uint32(len(f.metrics) + 1)
	f.metrics[name] = id
	f.metricTypes[id] = t
	return id, StatusOK
}

func (f *fakeHost) incrementMetric(id uint32, delta int64) Status {
	f.counters[id] += delta
	return StatusOK
}

func (f *fakeHost) setProperty(path string, value []byte) Status {
	f.props[path] = append([]byte(nil), value...)
	return StatusOK
}

func (f *fakeHost) getProperty(path []byte) ([]byte, Status) {
	v, ok := f.props[string(path)]
	if !ok {
		return nil, StatusNotFound
	}
	return v, StatusOK
}

// fixedNow is the clock of every test VM.
var fixedNow = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// testRoot is a plugin root whose behaviour each test sets with functions.
type testRoot struct {
	host      plugin.RootHost
	config    []byte
	configErr error
	panicIn   string // "configure" or "newStream"
	streams   []*testStream
	// stream configures each new stream before it is returned.
	stream func(*testStream)
}

func (r *testRoot) Configure(config []byte) error {
	if r.panicIn == "configure" {
		panic("configure exploded")
	}
	r.config = config
	return r.configErr
}

func (r *testRoot) NewStream(h plugin.StreamHost) plugin.Stream {
	if r.panicIn == "newStream" {
		panic("newStream exploded")
	}
	s := &testStream{h: h}
	if r.stream != nil {
		r.stream(s)
	}
	r.streams = append(r.streams, s)
	return s
}

// testStream runs the function set for a callback, or continues.
type testStream struct {
	h                 plugin.StreamHost
	reqHeaders        func(h plugin.StreamHost) plugin.Action
	reqBody           func(h plugin.StreamHost, size int) plugin.Action
	respHeaders       func(h plugin.StreamHost) plugin.Action
	respBody          func(h plugin.StreamHost) plugin.Action
	calls             int // header and body callbacks the plugin saw
	trailers          int // OnRequestTrailers calls
	respTrailers      int // OnResponseTrailers calls
	done              int
	responseCallbacks int
}

func run(f func(plugin.StreamHost) plugin.Action, h plugin.StreamHost) plugin.Action {
	if f == nil {
		return plugin.Continue
	}
	return f(h)
}

func (s *testStream) OnRequestHeaders(int, bool) plugin.Action {
	s.calls++
	return run(s.reqHeaders, s.h)
}

func (s *testStream) OnRequestBody(size int, _ bool) plugin.Action {
	s.calls++
	if s.reqBody == nil {
		return plugin.Continue
	}
	return s.reqBody(s.h, size)
}

func (s *testStream) OnRequestTrailers(int) plugin.Action {
	s.trailers++
	return plugin.Continue
}

func (s *testStream) OnResponseHeaders(int, bool) plugin.Action {
	s.calls++
	s.responseCallbacks++
	return run(s.respHeaders, s.h)
}

func (s *testStream) OnResponseBody(int, bool) plugin.Action {
	s.calls++
	s.responseCallbacks++
	return run(s.respBody, s.h)
}

// OnResponseTrailers counts response trailers; they carry no data the tests act on.
func (s *testStream) OnResponseTrailers(int) plugin.Action {
	s.calls++
	s.respTrailers++
	return plugin.Continue
}

func (s *testStream) OnDone() { s.done++ }

// newTestVM returns a VM on a fake host with root context 1 created and configured.
func newTestVM(t *testing.T, root *testRoot) (*vm, *fakeHost) {
	t.Helper()
	h := newFakeHost()
	v := newVM(h, func() time.Time { return fixedNow }, func(rh plugin.RootHost) Root {
		root.host = rh
		return root
	})
	h.buffers[BufferPluginConfiguration] = []byte(`{"routes":[]}`)
	v.contextCreate(1, 0)
	if !v.vmStart(1) {
		t.Fatal("vmStart = false")
	}
	if !v.configure(1, int32(len(h.buffers[BufferPluginConfiguration]))) {
		t.Fatalf("configure = false; logs %v", h.logs)
	}
	return v, h
}
