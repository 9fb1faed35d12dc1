package filtertest

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpmesh/gateway/filter/plugin/plugintest"
	"github.com/mcpmesh/gateway/wasmtest/host"
	"github.com/mcpmesh/gateway/wasmtest/wasmbuild"
)

// allocProfileStreams is the stream at which a module built with -tags allocprofile prints
// its allocation sites (allocProfileAt in filter/allocprofile_wasip1.go).
const allocProfileStreams = 2_000

// TestAllocProfile lists the guest's allocations per stream by site, for the request of
// BenchRequests named by ALLOCPROFILE (e.g. ToolsCall1KiB), with its bundle cached as in the
// benchmarks. It needs a module built with -tags allocprofile:
//
//	GOOS=wasip1 GOARCH=wasm go build -tags allocprofile -buildmode=c-shared -trimpath -o /tmp/ap.wasm ./filter
//	ALLOCPROFILE=ToolsCall1KiB GATEWAY_WASM=/tmp/ap.wasm go test -run AllocProfile -v ./wasmtest/filtertest
//
// Counts are per stream over the first allocProfileStreams streams (set-up included, so a
// one-off allocation shows as a small fraction); sites below 0.1 a stream are left out.
func TestAllocProfile(t *testing.T) {
	name := os.Getenv("ALLOCPROFILE")
	if name == "" {
		t.Skip("set ALLOCPROFILE to a request of plugintest.BenchRequests and GATEWAY_WASM to an allocprofile build")
	}
	req, ok := plugintest.BenchRequests()[name]
	if !ok {
		t.Fatalf("no request %q in plugintest.BenchRequests", name)
	}
	c := plugintest.Case{Request: req}
	ctx := context.Background()
	check := &CheckServer{}
	h, err := NewHost(ctx, wasmbuild.Module(t), check, func(o *host.Options) {
		o.LogLevel = host.LogWarn
		if os.Getenv("BENCH_LOG_INFO") != "" {
			o.LogLevel = host.LogInfo
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if _, err := send(ctx, h, check, c); err != nil {
		t.Fatal(err)
	}
	for range allocProfileStreams {
		st, err := h.NewStream(ctx, host.StreamInfo{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = drive(ctx, st, c)
		st.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	type site struct {
		objects, bytes float64
		at             string
	}
	var sites []site
	total := site{at: "total"}
	for _, e := range h.Logs() {
		// The guest's stderr reaches the log as it is (after a prefix of the host's).
		i := strings.Index(e.Message, "allocprofile streams=")
		if i < 0 {
			continue
		}
		line := e.Message[i:]
		var s site
		for f := range strings.FieldsSeq(line) {
			k, v, _ := strings.Cut(f, "=")
			n, _ := strconv.ParseFloat(v, 64)
			switch k {
			case "objects":
				s.objects = n / allocProfileStreams
			case "bytes":
				s.bytes = n / allocProfileStreams
			}
		}
		_, s.at, _ = strings.Cut(line, " at ")
		total.objects += s.objects
		total.bytes += s.bytes
		if s.objects >= 0.1 {
			sites = append(sites, s)
		}
	}
	if total.objects == 0 {
		t.Fatal("no allocprofile lines: is GATEWAY_WASM built with -tags allocprofile?")
	}
	slices.SortFunc(sites, func(a, b site) int { return int(b.objects*100) - int(a.objects*100) })
	for _, s := range append(sites, total) {
		t.Logf("%s: %.2f objects, %.0f bytes a stream: %s", name, s.objects, s.bytes, s.at)
	}
}
