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
	cases := map[string]plugintest.Case{}
	for name, req := range plugintest.BenchRequests() {
		cases[name] = plugintest.Case{Request: req}
	}
	benchStreams(b, wasmbuild.Module(b), cases, false)
}

// BenchmarkToolList_Wasm is the cost of a tools/list exchange — request and the upstream's
// answer of 50 tools — through filter.wasm in the wazero host, with a cached decision bundle.
func BenchmarkToolList_Wasm(b *testing.B) {
	benchStreams(b, wasmbuild.Module(b), plugintest.BenchToolLists(), false)
}

// benchStreams runs each case through module m (filter.wasm, or a floor module of
// BenchmarkFloor_Wasm, which must forward every case upstream) as a sub-benchmark on a host of its own (one VM, proxy log
// level warning — info with BENCH_LOG_INFO set, which adds the authorization record of each MCP
// request, as an Envoy at its default level logs it — and the guest's GOGC from BENCH_GOGC
// when set). The case runs once through the scenario
// runner first, which must find it decided without error; the measured loop then drives the
// stream alone (drive: what Envoy would run, without the runner's collection of counters,
// filter state and logs), and each iteration must end as that first run did, from the cached
// bundle (no check call).
//
// Back to back, each iteration finds the previous one's code and data in the core's caches,
// which a stream in a proxy does not: between its callbacks the proxy's own work and other
// VMs evict them. BENCH_COLD=1 measures that case (coldCaches, cold_test.go): before each
// iteration it writes an 8 MiB buffer (BENCH_COLD_MIB to change it), and with
// BENCH_COLD_WARM=<case> it then runs that other case's stream, to separate what the streams
// share from the measured stream's own cold cost; ns/op is then the streams' own time, taken
// around each one (B/op and allocs/op still count the warm stream's). On the 2-core Xeon of
// BENCHMARKS.md a cached 1 KiB tools/call at info level takes 2.3 times as long cold (fastest
// of five: 66 µs hot, 154 µs cold; BENCHMARKS.md, "Cold caches").
func benchStreams(b *testing.B, m *host.Module, cases map[string]plugintest.Case, mustForward bool) {
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
				if os.Getenv("BENCH_LOG_INFO") != "" {
					o.LogLevel = host.LogInfo
				}
				if g := os.Getenv("BENCH_GOGC"); g != "" {
					o.Env = map[string]string{"GOGC": g}
				}
			})
			if err != nil {
				b.Fatal(err)
			}
			defer h.Close()
			want, err := send(ctx, h, check, c)
			if err != nil || want.Stuck || (mustForward && !want.Forwarded) {
				b.Fatalf("first run: err %v, stuck %v, forwarded %v", err, want.Stuck, want.Forwarded)
			}
			calls := check.Calls.Load()
			cold := newColdCaches(b, cases)
			b.ReportAllocs()
			for b.Loop() {
				if cold != nil {
					cold.evict(ctx, b, h)
					cold.start()
				}
				st, err := h.NewStream(ctx, host.StreamInfo{})
				if err != nil {
					b.Fatal(err)
				}
				x, err := drive(ctx, st, c)
				st.Close()
				if err != nil || x.stuck || x.forwarded != want.Forwarded || replyStatus(x) != want.Status || len(x.clientBody) != len(want.ClientBody) {
					b.Fatalf("err %v, stuck %v, forwarded %v (want %v), status %d (want %d), client body %d bytes (want %d)",
						err, x.stuck, x.forwarded, want.Forwarded, replyStatus(x), want.Status, len(x.clientBody), len(want.ClientBody))
				}
				if cold != nil {
					cold.stop()
				}
			}
			if cold != nil {
				cold.report(b)
			}
			if n := check.Calls.Load() - calls; n != 0 {
				b.Fatalf("%d check calls while measuring, want 0 (the bundle is cached)", n)
			}
		})
	}
}

func replyStatus(x exchange) int {
	if x.reply == nil {
		return 0
	}
	return x.reply.Status
}
