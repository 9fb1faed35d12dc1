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

// BenchmarkToolList_Wasm is the cost of a tools/list exchange — request and the upstream's
// answer of 50 tools — through filter.wasm in the wazero host, with a cached decision bundle.
func BenchmarkToolList_Wasm(b *testing.B) {
	m := wasmbuild.Module(b)
	cases := plugintest.BenchToolLists()
	names := make([]string, 0, len(cases))
	for n := range cases {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		c := cases[name]
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
			if _, err := send(ctx, h, check, c); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if r, err := send(ctx, h, check, c); err != nil || r.CheckCalls != 0 || r.Stuck || r.ClientBody == "" {
					b.Fatalf("err %v, calls %d, stuck %v, body %d bytes", err, r.CheckCalls, r.Stuck, len(r.ClientBody))
				}
			}
		})
	}
}
