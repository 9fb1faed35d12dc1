package abi

import (
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/filter/plugin"
	"github.com/mcpmesh/gateway/filter/plugin/plugintest"
)

// BenchmarkVM_Request is the guest's whole per-request work natively: the ABI layer and the
// real plugin on a fake host, every callback Envoy makes for a request with a cached decision
// bundle. Its allocation counts are the guest's; BenchmarkRequest_Wasm in wasmtest/filtertest
// measures the same requests in the wasm host.
func BenchmarkVM_Request(b *testing.B) {
	reqs := plugintest.BenchRequests()
	names := make([]string, 0, len(reqs))
	for n := range reqs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		req := reqs[name]
		b.Run(name, func(b *testing.B) {
			h := newFakeHost()
			v := newVM(h, time.Now, func(rh plugin.RootHost) Root { return plugin.New(rh) })
			h.buffers[BufferPluginConfiguration] = plugintest.Config()
			v.contextCreate(1, 0)
			if !v.configure(1, int32(len(h.buffers[BufferPluginConfiguration]))) {
				b.Fatalf("configure: %v", h.logs)
			}
			id := uint32(2)
			runRequest(b, v, h, id, req) // fills the cache
			b.ReportAllocs()
			for b.Loop() {
				id++
				h.logs, h.local = h.logs[:0], h.local[:0]
				if runRequest(b, v, h, id, req) != 0 {
					b.Fatal("cache miss")
				}
			}
		})
	}
}

// runRequest sends req through stream id as Envoy does by default and returns the number of
// check calls answered.
func runRequest(b *testing.B, v *vm, h *fakeHost, id uint32, req plugintest.Request) int {
	hs := []plugin.Header{{Name: ":method", Value: req.Method}, {Name: ":path", Value: req.Path}, {Name: ":authority", Value: req.Authority}, {Name: ":scheme", Value: "https"}, {Name: "x-request-id", Value: plugintest.RequestID}}
	body := ""
	for _, c := range req.Chunks {
		body += c
	}
	if body != "" {
		hs = append(hs, plugin.Header{Name: "content-length", Value: strconv.Itoa(len(body))})
	}
	for _, kv := range req.Headers {
		hs = append(hs, plugin.Header{Name: kv[0], Value: kv[1]})
	}
	h.maps[MapHTTPRequestHeaders] = hs
	v.contextCreate(id, 1)
	act := v.requestHeaders(id, int32(len(hs)), body == "")
	answered := 0
	for len(h.calls) > 0 {
		c := h.calls[0]
		h.calls = h.calls[1:]
		var key string
		for _, ch := range c.headers {
			if ch.Name == "x-gateway-filter-key" {
				key = ch.Value
			}
		}
		a := plugintest.AnswerCheck(key, []byte(c.body))
		h.maps[MapHTTPCallResponseHeaders] = []plugin.Header{{Name: ":status", Value: strconv.Itoa(a.Status)}}
		h.buffers[BufferHTTPCallResponseBody] = []byte(a.Body)
		v.httpCallResponse(1, c.id, 1, int32(len(a.Body)), 0)
		answered++
		act = plugin.Continue
	}
	if body != "" && act == plugin.Continue && len(h.local) == 0 {
		h.buffers[BufferHTTPRequestBody] = []byte(body)
		v.requestBody(id, int32(len(body)), true)
	}
	v.done(id)
	v.log(id)
	v.delete(id)
	return answered
}
