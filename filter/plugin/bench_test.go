package plugin_test

import (
	"os"
	"sort"
	"testing"

	"github.com/mcpmesh/gateway/filter/plugin"
	"github.com/mcpmesh/gateway/filter/plugin/plugintest"
)

// BenchmarkRequest_Native is the per-request cost of the filter's Go logic with a cached
// decision bundle (compare BenchmarkRequest_Wasm in wasmtest/filtertest). Like that one it
// runs at log level warning, where authorization records are not built; set BENCH_LOG_INFO
// to build and log them. The request runs once through plugintest's recording runner, which
// fills the cache; the loop then drives the stream alone (NativeFilter.Drive, which keeps no
// record of it) and each iteration must end as that first run did.
func BenchmarkRequest_Native(b *testing.B) {
	reqs := plugintest.BenchRequests()
	names := make([]string, 0, len(reqs))
	for n := range reqs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		req := reqs[name]
		b.Run(name, func(b *testing.B) {
			nf, err := plugintest.NewNativeFilter()
			if err != nil {
				b.Fatal(err)
			}
			nf.Host.Level = plugin.LogWarn // as the wasm host of BenchmarkRequest_Wasm
			if os.Getenv("BENCH_LOG_INFO") != "" {
				nf.Host.Level = plugin.LogInfo // authorization records built and logged
			}
			first := nf.Run(req) // fills the cache
			if first.CheckCalls != 1 && name != "PassThrough" {
				b.Fatalf("first request made %d check calls", first.CheckCalls)
			}
			c := plugintest.Case{Request: req}
			want := plugintest.Outcome{Forwarded: first.Forwarded, Status: first.Status}
			b.ReportAllocs()
			for b.Loop() {
				nf.Host.Logs = nf.Host.Logs[:0]
				if o := nf.Drive(c); o != want {
					b.Fatalf("got %+v, want %+v (the first run's end, from the cache)", o, want)
				}
			}
		})
	}
}

// BenchmarkToolList_Native is the cost of the exchanges of plugintest.BenchToolLists (a
// request and the upstream's answer: tools/list answers filtered, other answers read for
// smuggled lists) in the filter's Go logic; BenchmarkToolList_Wasm in wasmtest/filtertest
// runs the same exchanges through filter.wasm.
func BenchmarkToolList_Native(b *testing.B) {
	cases := plugintest.BenchToolLists()
	names := make([]string, 0, len(cases))
	for n := range cases {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		c := cases[name]
		b.Run(name, func(b *testing.B) {
			nf, err := plugintest.NewNativeFilter()
			if err != nil {
				b.Fatal(err)
			}
			nf.Host.Level = plugin.LogWarn
			first := nf.RunCase(c, plugintest.Mode{})
			if first.CheckCalls != 1 || first.ClientBody == "" {
				b.Fatalf("first exchange: %d check calls, body %d bytes", first.CheckCalls, len(first.ClientBody))
			}
			want := plugintest.Outcome{Forwarded: first.Forwarded, Status: first.Status, ClientBodyLen: len(first.ClientBody)}
			b.ReportAllocs()
			for b.Loop() {
				nf.Host.Logs = nf.Host.Logs[:0]
				if o := nf.Drive(c); o != want {
					b.Fatalf("got %+v, want %+v (the first exchange's end, from the cache)", o, want)
				}
			}
		})
	}
}
