package filtertest

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/filter/plugin/plugintest"
	"github.com/mcpmesh/gateway/wasmtest/host"
)

// coldDefaultMiB is the eviction buffer of BENCH_COLD. The benchmark machine
// (/sys/devices/system/cpu/cpu0/cache: Intel Xeon, 48 KiB L1d 12-way, 32 KiB L1i 8-way,
// 2 MiB L2 16-way private to the core, 260 MiB L3 shared by the socket) keeps a stream's
// code and data in L1 and L2 when iterations run back to back. 8 MiB is four times the L2:
// written line by line it replaces every line of L1d and L2 (pseudo-LRU keeps nothing of the
// old set after four full passes' worth of new lines) and, as 2,048 distinct 4 KiB pages, the
// data TLB. It does not flush the L3, which a stream on a busy proxy does not lose either
// (evicting 260 MiB would cost tens of milliseconds an iteration); BENCH_COLD_MIB=512 is that
// colder case. L1i is not flushed directly: code lines that fall out of L2 are refetched
// from L3 once L1i loses them, which the measured figures show it does.
const coldDefaultMiB = 8

// coldCaches evicts the CPU caches between iterations and times the streams alone: what a
// stream's callbacks meet in a proxy that runs other work between them (Envoy's own
// processing, other filters and VMs; in wasmtest/cmd/gatewaybench the Go HTTP stack). nil
// unless BENCH_COLD is set.
//
// It keeps its own clock rather than stopping the benchmark's: b.StopTimer and b.StartTimer
// read the memory statistics, which stops the world and empties the Go allocator's per-P
// caches, so every timed iteration would start by refilling them — tens of microseconds a
// stream on the benchmark machine that have nothing to do with the CPU caches.
type coldCaches struct {
	buf  []byte
	pass byte
	// t0 is when the timed stream started; spent and n add up the timed streams.
	t0    time.Time
	spent time.Duration
	n     int
	// warm, when set (BENCH_COLD_WARM names a case of the same benchmark), runs after the
	// eviction and before the timed stream, also outside the timer: it brings back what a
	// different stream shares with the measured one (the runtime, the host calls, the
	// common filter code) so that the rest of the cold cost is the measured stream's own.
	warm *plugintest.Case
}

// newColdCaches reads BENCH_COLD, BENCH_COLD_MIB and BENCH_COLD_WARM.
func newColdCaches(b *testing.B, cases map[string]plugintest.Case) *coldCaches {
	if os.Getenv("BENCH_COLD") == "" {
		return nil
	}
	mib := coldDefaultMiB
	if s := os.Getenv("BENCH_COLD_MIB"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			b.Fatalf("BENCH_COLD_MIB=%q: want a positive number of MiB", s)
		}
		mib = n
	}
	c := &coldCaches{buf: make([]byte, mib<<20)}
	if w := os.Getenv("BENCH_COLD_WARM"); w != "" {
		wc, ok := cases[w]
		if !ok {
			b.Fatalf("BENCH_COLD_WARM=%q is not a case of this benchmark", w)
		}
		c.warm = &wc
	}
	return c
}

// evict writes one byte in every 64-byte line of the buffer (a write, so each line is
// fetched for ownership and later written back, as another tenant's data would be), then
// runs the warm stream if there is one.
func (c *coldCaches) evict(ctx context.Context, b *testing.B, h *host.Host) {
	c.pass++
	for i := 0; i < len(c.buf); i += 64 {
		c.buf[i] = c.pass
	}
	if c.warm == nil {
		return
	}
	st, err := h.NewStream(ctx, host.StreamInfo{})
	if err != nil {
		b.Fatal(err)
	}
	_, err = drive(ctx, st, *c.warm)
	st.Close()
	if err != nil {
		b.Fatalf("warm stream: %v", err)
	}
}

// start and stop bracket the timed stream.
func (c *coldCaches) start() { c.t0 = time.Now() }

func (c *coldCaches) stop() {
	c.spent += time.Since(c.t0)
	c.n++
}

// report replaces ns/op, which counts the evictions too, by the streams' own time.
func (c *coldCaches) report(b *testing.B) {
	if c.n > 0 {
		b.ReportMetric(float64(c.spent.Nanoseconds())/float64(c.n), "ns/op")
	}
}
