package filtertest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/filter/plugin/plugintest"
	"github.com/mcpmesh/gateway/wasmtest/host"
	"github.com/mcpmesh/gateway/wasmtest/wasmbuild"
)

const (
	memoryRequests = 100_000
	memoryTokens   = 1_000
	// maxVMMemory bounds the linear memory of one filter VM after memoryRequests mixed
	// requests. Issue 17 asks for 6 MiB; today's module settles at 8.75 MiB at the default
	// GOGC (4 MiB after start; BENCHMARKS.md "Memory per VM" says what it is made of and why
	// 6 MiB is out of reach at GOGC=100), so the bound is that figure with a margin: it
	// catches state that grows with requests, not the goal.
	maxVMMemory = 10 << 20
)

// TestFilterMemory_MixedRequestsWithDistinctTokens sends memoryRequests requests to one VM —
// the requests of BenchRequests in turn (tools/call of 1 and 4 KiB, tools/list, a denied call,
// a pass-through, a call in a session) and, one in fifty, an exchange of BenchToolLists (tool
// lists of 50 tools filtered, answers read for smuggled lists) — with memoryTokens distinct
// bearer tokens, each a check call and then a cached decision bundle, and asserts that the
// VM's linear memory (a high-water mark: wasm memory never shrinks) stays within maxVMMemory.
//
// The guest's clocks advance 1 µs per reading, so that the figure does not depend on the
// machine's load; TestFilterMemory_GCLimiterCannotStallCollection runs with the real clock.
// MEMTEST_REAL_CLOCK=1 and MEMTEST_GUEST_ENV=K=V,K=V (e.g. GOGC=100) change that here, and
// MEMTEST_LEGACY=1 runs the VM in the legacy Envoy mode (host.CompatLegacy).
func TestFilterMemory_MixedRequestsWithDistinctTokens(t *testing.T) {
	n := memoryRequests
	if testing.Short() {
		n = 10_000
	}
	var env map[string]string
	if s := os.Getenv("MEMTEST_GUEST_ENV"); s != "" {
		env = map[string]string{}
		for _, kv := range strings.Split(s, ",") {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
	}
	compat := host.CompatCurrent
	if os.Getenv("MEMTEST_LEGACY") != "" {
		compat = host.CompatLegacy
	}
	mem, err := runMixed(t, n, os.Getenv("MEMTEST_REAL_CLOCK") != "", env, compat)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("linear memory: %d bytes (%.2f MiB) after %d requests with %d tokens", mem, float64(mem)/(1<<20), n, memoryTokens)
	if mem > maxVMMemory {
		t.Errorf("linear memory %d bytes (%.2f MiB) after %d requests, want at most %d MiB", mem, float64(mem)/(1<<20), n, maxVMMemory>>20)
	}
}

// TestFilterMemory_GCLimiterCannotStallCollection is the regression test for the VM whose
// memory grew without bound (BENCHMARKS.md, "Memory per VM"): in a wasm reactor the Go
// runtime's other goroutines run only while an export yields, so a collection advances through
// allocation assists alone, and once the GC CPU limiter — which measures by the clock — has
// turned assists off, only a scheduler pass turns them on again. GOMEMLIMIT=5MiB, near the
// live heap, makes the limiter trip within seconds with the real clock; before the filter
// yielded to the scheduler every yieldEvery streams (filter/internal/abi), this VM grew by
// about 4.5 KB a request (90 MiB after 20,000) and never collected again.
func TestFilterMemory_GCLimiterCannotStallCollection(t *testing.T) {
	const n = 20_000
	// Only in the current Envoy mode: in the legacy one the filter cannot yield
	// (docs/filter.md), and a memory limit still stalls the collection there.
	mem, err := runMixed(t, n, true, map[string]string{"GOMEMLIMIT": "5MiB"}, host.CompatCurrent)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("linear memory: %d bytes (%.2f MiB) after %d requests, GOMEMLIMIT=5MiB, real clock", mem, float64(mem)/(1<<20), n)
	if mem > maxVMMemory {
		t.Errorf("linear memory %d bytes (%.2f MiB) after %d requests with GOMEMLIMIT=5MiB and the real clock, want at most %d MiB: the collector stalled", mem, float64(mem)/(1<<20), n, maxVMMemory>>20)
	}
}

// runMixed sends n mixed requests through a one-VM host and returns its linear memory size.
// The guest's clock is the real one when realClock is set, otherwise one that advances 1 µs a
// reading; env is the guest's environment (GOGC, GOMEMLIMIT); compat the Envoy mode.
func runMixed(t testing.TB, n int, realClock bool, env map[string]string, compat host.Compat) (uint32, error) {
	ctx := context.Background()
	check := &CheckServer{}
	// Every token is answered as alice's: the same identity, a bundle per token and route.
	alice := func(key string, body []byte) plugintest.CheckAnswer {
		if i := bytes.Index(body, []byte(`"mem-token-`)); i >= 0 {
			j := i + 1 + bytes.IndexByte(body[i+1:], '"')
			body = append(append(append([]byte{}, body[:i+1]...), plugintest.TokenAlice...), body[j:]...)
		}
		return plugintest.AnswerCheck(key, body)
	}
	check.answer.Store(&alice)
	var ticks atomic.Int64
	base := time.Now()
	h, err := NewHost(ctx, wasmbuild.Module(t), check, func(o *host.Options) {
		o.LogLevel = host.LogWarn
		if !realClock {
			o.Now = func() time.Time { return base.Add(time.Duration(ticks.Add(1000))) }
		}
		o.Env = env
		o.Compat = compat
	})
	if err != nil {
		return 0, err
	}
	defer h.Close()
	t.Logf("linear memory after start: %d bytes", h.MemoryBytes(0))

	reqs, lists := plugintest.BenchRequests(), plugintest.BenchToolLists()
	var cases, exchanges []plugintest.Case
	for _, name := range sortedKeys(reqs) {
		cases = append(cases, plugintest.Case{Request: reqs[name]})
	}
	for _, name := range sortedKeys(lists) {
		exchanges = append(exchanges, lists[name])
	}
	for i := range n {
		c := cases[i%len(cases)]
		if i%50 == 49 {
			c = exchanges[(i/50)%len(exchanges)]
		}
		c.Request = withToken(c.Request, fmt.Sprintf("mem-token-%04d", i%memoryTokens))
		r, err := send(ctx, h, check, c)
		if err != nil {
			return 0, fmt.Errorf("request %d: %v", i, err)
		}
		if r.Stuck {
			return 0, fmt.Errorf("request %d: stuck", i)
		}
		if (i+1)%(n/5) == 0 {
			t.Logf("linear memory after %d requests: %d bytes", i+1, h.MemoryBytes(0))
		}
	}
	// A module built with -tags memdebug (filter/memdebug_wasip1.go) prints its heap figures.
	for _, e := range h.Logs() {
		if strings.Contains(e.Message, "memdebug ") {
			t.Log(e.Message)
		}
	}
	if calls := check.Calls.Load(); calls < memoryTokens {
		return 0, fmt.Errorf("%d check calls for %d tokens", calls, memoryTokens)
	}
	return h.MemoryBytes(0), nil
}

// withToken returns req with its bearer token replaced by token.
func withToken(req plugintest.Request, token string) plugintest.Request {
	hs := make([][2]string, len(req.Headers))
	for i, kv := range req.Headers {
		if kv[0] == "authorization" {
			kv[1] = "Bearer " + token
		}
		hs[i] = kv
	}
	req.Headers = hs
	return req
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
