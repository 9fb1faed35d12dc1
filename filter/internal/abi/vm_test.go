package abi

import (
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/filter/plugin"
)

func TestVM_ConfigureHandsPluginConfigurationToRoot(t *testing.T) {
	t.Parallel()
	root := &testRoot{}
	_, h := newTestVM(t, root)
	if string(root.config) != `{"routes":[]}` {
		t.Fatalf("root saw config %q", root.config)
	}
	if got := root.host.Now(); !got.Equal(fixedNow) {
		t.Fatalf("RootHost.Now = %v", got)
	}
	if len(h.local) != 0 {
		t.Fatal("no local response expected")
	}
}

func TestVM_ConfigureFailuresReturnFalseAndLog(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		root    *testRoot
		setup   func(*fakeHost)
		wantLog string
		level   plugin.LogLevel
	}{
		{"plugin error", &testRoot{configErr: errors.New("routes[0].from: bad URL")}, nil, "configure plugin: routes[0].from: bad URL", plugin.LogError},
		{"plugin panic", &testRoot{panicIn: "configure"}, nil, "configure exploded", plugin.LogCritical},
		{"unreadable configuration", &testRoot{}, func(h *fakeHost) { h.fail["getBufferBytes"] = StatusInternalFailure }, "read plugin configuration", plugin.LogError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newFakeHost()
			if tt.setup != nil {
				tt.setup(h)
			}
			h.buffers[BufferPluginConfiguration] = []byte(`{}`)
			v := newVM(h, time.Now, func(plugin.RootHost) Root { return tt.root })
			v.contextCreate(1, 0)
			if v.configure(1, 2) {
				t.Fatal("configure = true, want false")
			}
			if !h.hasLog(tt.level, tt.wantLog) {
				t.Fatalf("missing log %q at level %d: %v", tt.wantLog, tt.level, h.logs)
			}
			// A stream of the unconfigured root is refused, never passed through.
			v.contextCreate(2, 1)
			if got := v.requestHeaders(2, 3, false); got != plugin.Pause {
				t.Fatalf("requestHeaders = %v, want Pause", got)
			}
			if len(h.local) != 1 || h.local[0].status != 500 {
				t.Fatalf("local responses = %+v, want one 500", h.local)
			}
		})
	}
}

func TestVM_ConfigureOfUnknownRootFails(t *testing.T) {
	t.Parallel()
	h := newFakeHost()
	v := newVM(h, time.Now, func(plugin.RootHost) Root { return &testRoot{} })
	if v.configure(9, 0) {
		t.Fatal("configure of an unknown root = true")
	}
	if !h.hasLog(plugin.LogError, "unknown root context 9") {
		t.Fatalf("logs = %v", h.logs)
	}
}

func TestVM_NoRegisteredPluginFailsClosed(t *testing.T) {
	t.Parallel()
	h := newFakeHost()
	v := newVM(h, time.Now, nil)
	v.contextCreate(1, 0)
	if v.configure(1, 0) {
		t.Fatal("configure without a plugin = true")
	}
	v.contextCreate(2, 1)
	if got := v.requestHeaders(2, 1, true); got != plugin.Pause || len(h.local) != 1 || h.local[0].status != 500 {
		t.Fatalf("requestHeaders = %v, local = %+v; want Pause and 500", got, h.local)
	}
}

func TestVM_StreamCallbacksReachThePlugin(t *testing.T) {
	t.Parallel()
	root := &testRoot{stream: func(s *testStream) {
		s.reqHeaders = func(h plugin.StreamHost) plugin.Action {
			if p, _ := h.RequestHeader(":path"); p == "/deny" {
				return plugin.Pause
			}
			return plugin.Continue
		}
	}}
	v, h := newTestVM(t, root)
	h.maps[MapHTTPRequestHeaders] = []plugin.Header{{Name: ":path", Value: "/ok"}}
	v.contextCreate(2, 1)
	if got := v.requestHeaders(2, 1, false); got != plugin.Continue {
		t.Fatalf("/ok: requestHeaders = %v", got)
	}
	for _, step := range []struct {
		name string
		act  plugin.Action
	}{
		{"request body", v.requestBody(2, 10, true)},
		{"request trailers", v.requestTrailers(2, 1)},
		{"response headers", v.responseHeaders(2, 4, false)},
		{"response body", v.responseBody(2, 10, true)},
		{"response trailers", v.responseTrailers(2, 1)},
	} {
		if step.act != plugin.Continue {
			t.Errorf("%s = %v, want Continue", step.name, step.act)
		}
	}
	if s := root.streams[0]; s.calls != 5 {
		t.Fatalf("plugin saw %d callbacks, want 5", s.calls)
	}
	if s := root.streams[0]; s.trailers != 1 || s.respTrailers != 1 {
		t.Fatalf("OnRequestTrailers ran %d times, OnResponseTrailers %d, want 1 each: trailers must reach the plugin", s.trailers, s.respTrailers)
	}
	h.maps[MapHTTPRequestHeaders] = []plugin.Header{{Name: ":path", Value: "/deny"}}
	v.contextCreate(3, 1)
	if got := v.requestHeaders(3, 1, false); got != plugin.Pause {
		t.Fatalf("/deny: requestHeaders = %v", got)
	}
}

func TestVM_PanicInRequestCallbackAnswers500AndVMStaysUp(t *testing.T) {
	t.Parallel()
	root := &testRoot{stream: func(s *testStream) {
		s.reqHeaders = func(h plugin.StreamHost) plugin.Action {
			if p, _ := h.RequestHeader(":path"); p == "/boom" {
				var counts []int
				counts[len(p)]++ // index out of range: a runtime error
			}
			return plugin.Continue
		}
	}}
	v, h := newTestVM(t, root)
	h.maps[MapHTTPRequestHeaders] = []plugin.Header{{Name: ":path", Value: "/boom"}}
	v.contextCreate(2, 1)
	if got := v.requestHeaders(2, 1, false); got != plugin.Pause {
		t.Fatalf("requestHeaders = %v, want Pause", got)
	}
	if len(h.local) != 1 || h.local[0].status != 500 || h.local[0].grpc != -1 {
		t.Fatalf("local responses = %+v, want one 500 with grpc -1", h.local)
	}
	if !h.hasLog(plugin.LogCritical, "panic in proxy_on_request_headers (context 2): runtime error: index out of range [5] with length 0") {
		t.Fatalf("missing critical log: %v", h.logs)
	}
	// The failed stream is no longer handed to the plugin; its own 500 passes on the way out.
	if got := v.requestBody(2, 5, true); got != plugin.Pause {
		t.Fatalf("requestBody after panic = %v", got)
	}
	if got := v.responseHeaders(2, 3, false); got != plugin.Continue {
		t.Fatalf("responseHeaders after panic = %v", got)
	}
	if s := root.streams[0]; s.calls != 1 {
		t.Fatalf("plugin saw %d callbacks after its panic, want 1 in total", s.calls)
	}
	if len(h.local) != 1 {
		t.Fatalf("500 sent %d times", len(h.local))
	}
	v.log(2)
	v.delete(2)
	if root.streams[0].done != 1 {
		t.Fatal("OnDone must still run once for a failed stream")
	}

	// The next stream works.
	h.maps[MapHTTPRequestHeaders] = []plugin.Header{{Name: ":path", Value: "/fine"}}
	v.contextCreate(3, 1)
	if got := v.requestHeaders(3, 1, false); got != plugin.Continue {
		t.Fatalf("next stream: requestHeaders = %v", got)
	}
}

func TestVM_PanicAfterResponseStartedResetsStream(t *testing.T) {
	t.Parallel()
	root := &testRoot{stream: func(s *testStream) {
		s.respBody = func(plugin.StreamHost) plugin.Action { panic(errors.New("body exploded")) }
	}}
	v, h := newTestVM(t, root)
	v.contextCreate(2, 1)
	v.requestHeaders(2, 1, true)
	v.responseHeaders(2, 1, false)
	if got := v.responseBody(2, 3, true); got != plugin.Pause {
		t.Fatalf("responseBody = %v, want Pause", got)
	}
	if len(h.local) != 0 || !reflect.DeepEqual(h.closed, []StreamType{StreamHTTPResponse}) {
		t.Fatalf("local = %+v, closed = %v; want no local response and a reset", h.local, h.closed)
	}
	if !h.hasLog(plugin.LogCritical, "body exploded") {
		t.Fatalf("logs = %v", h.logs)
	}
}

func TestVM_PanicInResponseHeadersAnswers500(t *testing.T) {
	t.Parallel()
	root := &testRoot{stream: func(s *testStream) {
		s.respHeaders = func(plugin.StreamHost) plugin.Action { panic("headers exploded") }
	}}
	v, h := newTestVM(t, root)
	v.contextCreate(2, 1)
	v.requestHeaders(2, 1, true)
	if got := v.responseHeaders(2, 1, false); got != plugin.Pause {
		t.Fatalf("responseHeaders = %v", got)
	}
	if len(h.local) != 1 || h.local[0].status != 500 {
		t.Fatalf("local = %+v", h.local)
	}
	// The 500 goes back through the filter: it passes.
	if got := v.responseHeaders(2, 1, false); got != plugin.Continue {
		t.Fatalf("responseHeaders of the local reply = %v", got)
	}
}

func TestVM_PanicInNewStreamFailsClosed(t *testing.T) {
	t.Parallel()
	root := &testRoot{}
	v, h := newTestVM(t, root)
	root.panicIn = "newStream"
	v.contextCreate(2, 1)
	if !h.hasLog(plugin.LogCritical, "newStream exploded") {
		t.Fatalf("logs = %v", h.logs)
	}
	if got := v.requestHeaders(2, 1, false); got != plugin.Pause || len(h.local) != 1 || h.local[0].status != 500 {
		t.Fatalf("requestHeaders = %v, local = %+v", got, h.local)
	}
	v.delete(2) // no stream, no OnDone: must not panic
}

func TestVM_UnknownStreamContextFailsClosed(t *testing.T) {
	t.Parallel()
	v, h := newTestVM(t, &testRoot{})
	if got := v.requestHeaders(42, 1, false); got != plugin.Pause {
		t.Fatalf("requestHeaders = %v", got)
	}
	if len(h.local) != 1 || h.local[0].status != 500 {
		t.Fatalf("local = %+v", h.local)
	}
	if got := v.responseHeaders(42, 1, false); got != plugin.Continue {
		t.Fatalf("responseHeaders of unknown context = %v", got)
	}
	v.contextCreate(43, 99) // unknown root
	if got := v.requestHeaders(43, 1, false); got != plugin.Pause || len(h.local) != 2 {
		t.Fatalf("stream of unknown root: %v, local = %+v", got, h.local)
	}
}

func TestVM_LocalReplyEndsRequestProcessing(t *testing.T) {
	t.Parallel()
	root := &testRoot{stream: func(s *testStream) {
		s.reqHeaders = func(h plugin.StreamHost) plugin.Action {
			h.SendLocalResponse(401, []plugin.Header{{Name: "www-authenticate", Value: `Bearer resource_metadata="x"`}}, []byte("no"))
			return plugin.Continue // a careless plugin: the layer still pauses
		}
	}}
	v, h := newTestVM(t, root)
	v.contextCreate(2, 1)
	if got := v.requestHeaders(2, 1, false); got != plugin.Pause {
		t.Fatalf("requestHeaders = %v, want Pause after a local reply", got)
	}
	want := localResponse{status: 401, body: "no", headers: []plugin.Header{{Name: "www-authenticate", Value: `Bearer resource_metadata="x"`}}, grpc: -1}
	if len(h.local) != 1 || !reflect.DeepEqual(h.local[0], want) {
		t.Fatalf("local = %+v, want %+v", h.local, want)
	}
	if got := v.requestBody(2, 3, true); got != plugin.Pause || root.streams[0].calls != 1 {
		t.Fatalf("requestBody after local reply = %v, plugin calls %d", got, root.streams[0].calls)
	}
	// The plugin still sees its own reply's response headers.
	if got := v.responseHeaders(2, 2, false); got != plugin.Continue || root.streams[0].responseCallbacks != 1 {
		t.Fatalf("responseHeaders = %v, plugin response callbacks %d", got, root.streams[0].responseCallbacks)
	}
}

func TestVM_RefusedRequestHeaderChangeNeverReachesUpstream(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		failOp string
		change func(plugin.StreamHost)
	}{
		{"remove", "removeHeaderMapValue", func(h plugin.StreamHost) { h.RemoveRequestHeader("authorization") }},
		{"set", "replaceHeaderMapValue", func(h plugin.StreamHost) { h.SetRequestHeader("authorization", "Bearer ti") }},
	}
	for _, tt := range tests {
		t.Run(tt.name+" then Continue", func(t *testing.T) {
			t.Parallel()
			root := &testRoot{stream: func(s *testStream) {
				s.reqHeaders = func(h plugin.StreamHost) plugin.Action { tt.change(h); return plugin.Continue }
			}}
			v, h := newTestVM(t, root)
			h.fail[tt.failOp] = StatusBadArgument
			v.contextCreate(2, 1)
			if got := v.requestHeaders(2, 1, false); got != plugin.Pause || len(h.local) != 1 || h.local[0].status != 500 {
				t.Fatalf("requestHeaders = %v, local = %+v; want Pause and 500", got, h.local)
			}
		})
		t.Run(tt.name+" then ContinueRequest", func(t *testing.T) {
			t.Parallel()
			root := &testRoot{stream: func(s *testStream) {
				s.reqHeaders = func(h plugin.StreamHost) plugin.Action {
					return plugin.Pause
				}
			}}
			v, h := newTestVM(t, root)
			v.contextCreate(2, 1)
			v.requestHeaders(2, 1, false)
			h.fail[tt.failOp] = StatusBadArgument
			sh := root.streams[0].h
			tt.change(sh)
			sh.ContinueRequest()
			if len(h.continued) != 0 || len(h.local) != 1 || h.local[0].status != 500 {
				t.Fatalf("continued = %v, local = %+v; want no continue and a 500", h.continued, h.local)
			}
		})
	}
}

func TestVM_OnDoneRunsOnceWhateverTheOrder(t *testing.T) {
	t.Parallel()
	orders := map[string][]string{
		"log done delete": {"log", "done", "delete"},
		"done log delete": {"done", "log", "delete"},
		"delete only":     {"delete"},
		"done only":       {"done"},
	}
	for name, order := range orders {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			root := &testRoot{}
			v, _ := newTestVM(t, root)
			v.contextCreate(2, 1)
			v.requestHeaders(2, 1, true)
			for _, step := range order {
				switch step {
				case "log":
					v.log(2)
				case "done":
					if !v.done(2) {
						t.Fatal("done = false")
					}
				case "delete":
					v.delete(2)
				}
			}
			if got := root.streams[0].done; got != 1 {
				t.Fatalf("OnDone ran %d times", got)
			}
		})
	}
}

func TestVM_RootDeleteForgetsRoot(t *testing.T) {
	t.Parallel()
	root := &testRoot{}
	v, _ := newTestVM(t, root)
	if !v.done(1) {
		t.Fatal("done(root) = false")
	}
	v.delete(1)
	if v.root(1) != nil {
		t.Fatal("root context still known after delete")
	}
}

func TestVM_ReusedStreamIDReachesTheNewStream(t *testing.T) {
	t.Parallel()
	root := &testRoot{}
	v, _ := newTestVM(t, root)
	v.contextCreate(2, 1)
	v.contextCreate(3, 1)
	v.requestHeaders(2, 1, true)
	v.requestHeaders(3, 1, true) // stream 3 is the last one looked up
	v.delete(3)
	v.requestHeaders(3, 1, true) // unknown now: refused, never delivered to the old stream
	v.contextCreate(3, 1)        // the host reuses the id
	v.requestHeaders(3, 1, true)
	v.requestHeaders(2, 1, true)
	if got := []int{root.streams[0].calls, root.streams[1].calls, root.streams[2].calls}; !slices.Equal(got, []int{2, 1, 1}) {
		t.Fatalf("callbacks per stream = %v, want [2 1 1]", got)
	}
}

func TestVM_YieldsToTheSchedulerOnceEveryYieldEveryStreams(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name      string
		canYield  bool
		streams   int
		wantYield int
	}{
		{"host with a working poll_oneoff", true, 2*yieldEvery + 1, 2},
		{"fewer streams than yieldEvery", true, yieldEvery - 1, 0},
		{"host whose poll_oneoff fails", false, 3 * yieldEvery, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v, _ := newTestVM(t, &testRoot{})
			yields, live := 0, 0
			if tt.canYield {
				v.yield = func() {
					yields++
					live = v.streams.len()
				}
			}
			for i := range tt.streams {
				id := uint32(10 + i)
				v.contextCreate(id, 1)
				v.requestHeaders(id, 1, true)
				v.done(id)
				v.delete(id)
				v.delete(id) // a second delete of the same context is not another stream
			}
			v.delete(1) // the root context does not count
			if yields != tt.wantYield {
				t.Fatalf("%d yields after %d streams, want %d", yields, tt.streams, tt.wantYield)
			}
			if live != 0 {
				t.Fatalf("%d stream contexts still known during a yield, want the deleted one forgotten first", live)
			}
		})
	}
}

func TestVM_ProbeYieldAsksTheHostOnce(t *testing.T) {
	t.Parallel()
	v, _ := newTestVM(t, &testRoot{})
	asked, yields := 0, 0
	probe := func() func() {
		asked++
		return func() { yields++ }
	}
	v.probeYield(probe)
	v.probeYield(probe)
	if asked != 1 {
		t.Fatalf("the host was asked %d times, want once", asked)
	}
	v.yield()
	if yields != 1 {
		t.Fatalf("v.yield is not the probe's answer")
	}
	refused, _ := newTestVM(t, &testRoot{})
	refused.probeYield(func() func() { return nil })
	if refused.yield != nil {
		t.Fatal("a host that refused still gets yields")
	}
}
