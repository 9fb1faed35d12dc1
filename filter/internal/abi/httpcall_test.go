package abi

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/mcpmesh/gateway/filter/plugin"
)

// callingRoot returns a root whose streams dispatch one call on request headers and record
// the response the ABI delivers, together with the effective context at delivery time.
func callingRoot(h **fakeHost, got *[]plugin.CallResponse, effective *[]uint32) *testRoot {
	return &testRoot{stream: func(s *testStream) {
		s.reqHeaders = func(sh plugin.StreamHost) plugin.Action {
			err := sh.DispatchHTTPCall("outbound|8080||tokensvc", []plugin.Header{
				{Name: ":method", Value: "POST"}, {Name: ":path", Value: "/check"}, {Name: ":authority", Value: "tokensvc"},
			}, []byte(`{"token":"x"}`), 2000, func(r plugin.CallResponse) {
				*got = append(*got, r)
				*effective = append(*effective, (*h).effective)
				sh.ContinueRequest()
			})
			if err != nil {
				panic(err)
			}
			return plugin.Pause
		}
	}}
}

func TestHTTPCall_ResponseRunsWithStreamAsEffectiveContext(t *testing.T) {
	t.Parallel()
	var h *fakeHost
	var got []plugin.CallResponse
	var effective []uint32
	v, fh := newTestVM(t, callingRoot(&h, &got, &effective))
	h = fh
	v.contextCreate(2, 1)
	if act := v.requestHeaders(2, 1, false); act != plugin.Pause {
		t.Fatalf("requestHeaders = %v", act)
	}
	if len(h.calls) != 1 {
		t.Fatalf("calls = %+v", h.calls)
	}
	c := h.calls[0]
	if c.cluster != "outbound|8080||tokensvc" || c.timeout != 2000 || c.body != `{"token":"x"}` || len(c.headers) != 3 {
		t.Fatalf("dispatched %+v", c)
	}
	h.maps[MapHTTPCallResponseHeaders] = []plugin.Header{{Name: ":status", Value: "200"}}
	h.buffers[BufferHTTPCallResponseBody] = []byte(`{"allow":true}`)
	h.effective = 1 // the host delivers the response on the root context
	v.httpCallResponse(1, c.id, 1, 14, 0)
	want := []plugin.CallResponse{{Headers: []plugin.Header{{Name: ":status", Value: "200"}}, Body: []byte(`{"allow":true}`)}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("callback got %+v, want %+v", got, want)
	}
	if !reflect.DeepEqual(effective, []uint32{2}) {
		t.Fatalf("effective context during callback = %v, want [2]", effective)
	}
	if !reflect.DeepEqual(h.continued, []StreamType{StreamHTTPRequest}) {
		t.Fatalf("continued = %v", h.continued)
	}
	// A second delivery of the same id is ignored.
	v.httpCallResponse(1, c.id, 1, 14, 0)
	if len(got) != 1 {
		t.Fatal("callback ran twice")
	}
}

func TestHTTPCall_FailureShapes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		numHeaders int32
		bodySize   int32
		setup      func(*fakeHost)
	}{
		{"zero headers (reset or timeout)", 0, 0, nil},
		{"malformed header map", 1, 0, func(h *fakeHost) { h.rawMaps[MapHTTPCallResponseHeaders] = []byte{9, 9, 9, 9, 9} }},
		{"headers unreadable", 1, 0, func(h *fakeHost) { h.fail["getHeaderMapPairs"] = StatusInternalFailure }},
		{"body unreadable", 1, 5, func(h *fakeHost) {
			h.maps[MapHTTPCallResponseHeaders] = []plugin.Header{{Name: ":status", Value: "200"}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var h *fakeHost
			var got []plugin.CallResponse
			var effective []uint32
			v, fh := newTestVM(t, callingRoot(&h, &got, &effective))
			h = fh
			v.contextCreate(2, 1)
			v.requestHeaders(2, 1, false)
			if tt.setup != nil {
				tt.setup(h)
			}
			v.httpCallResponse(1, h.calls[0].id, tt.numHeaders, tt.bodySize, 0)
			if len(got) != 1 || !got[0].Failed {
				t.Fatalf("callback got %+v, want one Failed response", got)
			}
		})
	}
}

func TestHTTPCall_ResponseAfterStreamEndedIsDropped(t *testing.T) {
	t.Parallel()
	for _, end := range []string{"done", "delete"} {
		t.Run(end, func(t *testing.T) {
			t.Parallel()
			var h *fakeHost
			var got []plugin.CallResponse
			var effective []uint32
			v, fh := newTestVM(t, callingRoot(&h, &got, &effective))
			h = fh
			v.contextCreate(2, 1)
			v.requestHeaders(2, 1, false)
			if end == "done" {
				v.done(2)
			} else {
				v.delete(2)
			}
			h.maps[MapHTTPCallResponseHeaders] = []plugin.Header{{Name: ":status", Value: "200"}}
			v.httpCallResponse(1, h.calls[0].id, 1, 0, 0)
			if len(got) != 0 || len(h.effectiveSets) != 0 || len(h.continued) != 0 {
				t.Fatalf("callback ran for an ended stream: got %+v, effective %v", got, h.effectiveSets)
			}
			if len(v.calls) != 0 {
				t.Fatalf("pending calls left: %v", v.calls)
			}
		})
	}
}

func TestHTTPCall_IDsAreScopedByRootContext(t *testing.T) {
	t.Parallel()
	var h *fakeHost
	var got []plugin.CallResponse
	var effective []uint32
	v, fh := newTestVM(t, callingRoot(&h, &got, &effective))
	h = fh
	// A second root context whose host numbers its calls from 1 as well.
	v.contextCreate(10, 0)
	v.configure(10, 0)
	v.contextCreate(2, 1)
	v.requestHeaders(2, 1, false)
	h.nextCallID = 1
	v.contextCreate(11, 10)
	v.requestHeaders(11, 1, false)
	if h.calls[0].id != h.calls[1].id {
		t.Fatalf("test setup: ids %d and %d should collide", h.calls[0].id, h.calls[1].id)
	}
	h.maps[MapHTTPCallResponseHeaders] = []plugin.Header{{Name: ":status", Value: "204"}}
	v.httpCallResponse(10, h.calls[1].id, 1, 0, 0)
	v.httpCallResponse(1, h.calls[0].id, 1, 0, 0)
	if !reflect.DeepEqual(effective, []uint32{11, 2}) {
		t.Fatalf("callbacks ran on contexts %v, want [11 2]", effective)
	}
}

func TestHTTPCall_PanicInCallbackAnswers500(t *testing.T) {
	t.Parallel()
	root := &testRoot{stream: func(s *testStream) {
		s.reqHeaders = func(sh plugin.StreamHost) plugin.Action {
			_ = sh.DispatchHTTPCall("c", nil, nil, 100, func(plugin.CallResponse) { panic("callback exploded") })
			return plugin.Pause
		}
	}}
	v, h := newTestVM(t, root)
	v.contextCreate(2, 1)
	v.requestHeaders(2, 1, false)
	v.httpCallResponse(1, h.calls[0].id, 0, 0, 0)
	if len(h.local) != 1 || h.local[0].status != 500 || !h.hasLog(plugin.LogCritical, "callback exploded") {
		t.Fatalf("local = %+v, logs = %v", h.local, h.logs)
	}
	if h.effective != 2 {
		t.Fatalf("500 sent with effective context %d, want 2", h.effective)
	}
}

func TestHTTPCall_DispatchErrors(t *testing.T) {
	t.Parallel()
	var dispatchErr, afterDoneErr error
	root := &testRoot{stream: func(s *testStream) {
		s.reqHeaders = func(sh plugin.StreamHost) plugin.Action {
			dispatchErr = sh.DispatchHTTPCall("nowhere", nil, nil, 100, func(plugin.CallResponse) {})
			return plugin.Pause
		}
	}}
	v, h := newTestVM(t, root)
	h.fail["httpCall"] = StatusBadArgument
	v.contextCreate(2, 1)
	v.requestHeaders(2, 1, false)
	if !errors.Is(dispatchErr, StatusBadArgument) || dispatchErr.Error() != "dispatch http call to nowhere: proxy-wasm status BAD_ARGUMENT" {
		t.Fatalf("dispatch error = %v", dispatchErr)
	}
	v.done(2)
	afterDoneErr = root.streams[0].h.DispatchHTTPCall("c", nil, nil, 100, func(plugin.CallResponse) {})
	if !errors.Is(afterDoneErr, ErrStreamEnded) {
		t.Fatalf("dispatch after end = %v, want ErrStreamEnded", afterDoneErr)
	}
}

// The header maps handed to the host share one buffer (vm.headerBuf). Each must reach the host
// exactly as serialized on its own, carrying nothing of a map handed over before it by
// another stream (another user): the host gets the bytes of the current map only.
func TestVM_HeaderMapsHandedOverCarryNothingOfEarlierStreams(t *testing.T) {
	t.Parallel()
	root := &testRoot{}
	v, h := newTestVM(t, root)
	host := func(id uint32) *StreamHost {
		v.contextCreate(id, 1)
		return root.streams[len(root.streams)-1].h.(*StreamHost)
	}
	alice := []plugin.Header{{Name: ":method", Value: "POST"}, {Name: ":path", Value: "/check"}, {Name: ":authority", Value: "tokensvc"},
		{Name: "authorization", Value: "Bearer alice-" + strings.Repeat("secret", 40)}}
	bob := []plugin.Header{{Name: ":method", Value: "POST"}, {Name: ":path", Value: "/c"}, {Name: ":authority", Value: "t"}}
	huge := []plugin.Header{{Name: "x-huge", Value: strings.Repeat("h", 2*maxHeaderBuf)}}
	short := []plugin.Header{{Name: "content-type", Value: "text/plain"}}
	var want [][]plugin.Header
	if err := host(2).DispatchHTTPCall("tokensvc", alice, nil, 100, nil); err != nil {
		t.Fatal(err)
	}
	want = append(want, alice)
	if err := host(3).DispatchHTTPCall("tokensvc", bob, nil, 100, nil); err != nil {
		t.Fatal(err)
	}
	want = append(want, bob)
	host(4).SendLocalResponse(403, short, nil)
	want = append(want, short)
	host(5).SendLocalResponse(403, nil, nil)
	want = append(want, nil)
	host(6).SendLocalResponse(431, huge, nil)
	want = append(want, huge)
	host(7).SendLocalResponse(403, short, nil)
	want = append(want, short)
	v.requestHeaders(99, 1, true) // an unknown stream: the fail-closed answer
	want = append(want, failClosedHeaders)
	if len(h.handed) != len(want) {
		t.Fatalf("%d header maps handed over, want %d", len(h.handed), len(want))
	}
	for i, hs := range want {
		if exact := AppendHeaderMap(nil, hs); !bytes.Equal(h.handed[i], exact) {
			t.Errorf("map %d: host got %q, want %q", i, h.handed[i], exact)
		}
		if i > 0 && bytes.Contains(h.handed[i], []byte("alice")) {
			t.Errorf("map %d carries alice's token", i)
		}
	}
	if cap(v.headerBuf) > maxHeaderBuf {
		t.Errorf("the VM keeps a %d-byte serialization buffer, above maxHeaderBuf", cap(v.headerBuf))
	}
}

// A host that reuses the id of a live stream for a new one (Envoy issues ids from a counter;
// a confused host might not) replaces the context. The response to a call the replaced stream
// dispatched must not run that stream's callback on the new one: it would continue, or set
// the headers of, the request of whoever the host now calls by that id (a check call's
// callback sets the checked user's assertion). The replaced stream ends (OnDone), so that
// the plugin gives back what it held for it (a check call's slot).
func TestHTTPCall_ResponseNeverReachesAStreamReusingTheID(t *testing.T) {
	t.Parallel()
	var h *fakeHost
	var got []plugin.CallResponse
	var effective []uint32
	root := callingRoot(&h, &got, &effective)
	v, fh := newTestVM(t, root)
	h = fh
	v.contextCreate(2, 1)
	v.requestHeaders(2, 1, false) // dispatches a call
	v.contextCreate(2, 1)         // the host reuses the live id
	if root.streams[0].done != 1 || root.streams[1].done != 0 {
		t.Fatalf("OnDone of the replaced stream %d, of the new one %d; want 1, 0", root.streams[0].done, root.streams[1].done)
	}
	h.maps[MapHTTPCallResponseHeaders] = []plugin.Header{{Name: ":status", Value: "200"}}
	h.effective = 1
	v.httpCallResponse(1, h.calls[0].id, 1, 0, 0)
	if len(got) != 0 || len(h.continued) != 0 || len(h.local) != 0 {
		t.Fatalf("the replaced stream's callback ran on the new one: got %+v, effective %v, continued %v", got, effective, h.continued)
	}
	// The new stream's own call is delivered as usual.
	v.requestHeaders(2, 1, false)
	v.httpCallResponse(1, h.calls[1].id, 1, 0, 0)
	if len(got) != 1 || !reflect.DeepEqual(effective, []uint32{2}) {
		t.Fatalf("the new stream's call: got %+v, effective %v", got, effective)
	}
}
