package filtertest

import (
	"context"
	"os"
	"sort"
	"testing"

	"github.com/mcpmesh/gateway/filter/plugin/plugintest"
	"github.com/mcpmesh/gateway/wasmtest/host"
	"github.com/mcpmesh/gateway/wasmtest/wasmbuild"
)

// BenchmarkRequest_Wasm is the per-request cost of filter.wasm in the wazero host with a
// cached decision bundle: stream creation, every callback, the host calls they make and the
// stream's end.
func BenchmarkRequest_Wasm(b *testing.B) {
	m := wasmbuild.Module(b)
	reqs := plugintest.BenchRequests()
	names := make([]string, 0, len(reqs))
	for n := range reqs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		req := reqs[name]
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			check := &CheckServer{}
			h, err := NewHost(ctx, m, check, func(o *host.Options) {
				o.LogLevel = host.LogWarn
				if g := os.Getenv("BENCH_GOGC"); g != "" {
					o.Env = map[string]string{"GOGC": g}
				}
			})
			if err != nil {
				b.Fatal(err)
			}
			defer h.Close()
			if _, err := Run(ctx, h, check, req); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if r, err := Run(ctx, h, check, req); err != nil || r.CheckCalls != 0 || r.Stuck {
					b.Fatalf("err %v, calls %d, stuck %v", err, r.CheckCalls, r.Stuck)
				}
			}
		})
	}
}
