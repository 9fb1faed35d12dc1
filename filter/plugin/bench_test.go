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
// to build and log them.
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
			b.ReportAllocs()
			for b.Loop() {
				nf.Host.Logs = nf.Host.Logs[:0]
				if r := nf.Run(req); r.CheckCalls != 0 {
					b.Fatal("cache miss")
				}
			}
		})
	}
}
