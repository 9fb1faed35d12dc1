package filtertest

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/filter/plugin/plugintest"
	"github.com/mcpmesh/gateway/shared/checkapi"
	"github.com/mcpmesh/gateway/wasmtest/host"
	"github.com/mcpmesh/gateway/wasmtest/wasmbuild"
)

// loadKinds are the streams of the legacy-Envoy load test, sent round robin.
const (
	kindCached    = iota // tools/call of echo, 1 KiB, with alice's cached bundle
	kindUncached         // tools/call with a token seen for the first time: a check call
	kindToolsList        // tools/list answered with 50 tools, one of them refused
	kindLargeBody        // a 4,000-byte tools/call, near the route's max_request_bytes
	kindTooLarge         // a 6,000-byte tools/call: 413
	kindDenied           // tools/call of delete_everything: an isError result
	kindBigList          // tools/list answered with 400 tools (about 120 KB)
	loadKinds
)

// userAnswer answers check calls for the tokens "user-N" as the token service would for a
// signed-in user N of example.com, for "burst-N" the same with a 4 KiB assertion (to fill the
// decision cache), and every other credential as plugintest.AnswerCheck.
func userAnswer(key string, body []byte) plugintest.CheckAnswer {
	var req checkapi.Request
	if json.Unmarshal(body, &req) != nil || key != plugintest.FilterKey {
		return plugintest.AnswerCheck(key, body)
	}
	if n, ok := strings.CutPrefix(req.Token, "user-"); ok {
		return userBundle(n, plugintest.AssertionForPrefix+req.Host)
	}
	if n, ok := strings.CutPrefix(req.Token, "burst-"); ok {
		return userBundle(n, plugintest.AssertionForPrefix+strings.Repeat("a", 4<<10))
	}
	return plugintest.AnswerCheck(key, body)
}

// userBundle is the token service's answer for user n of example.com.
func userBundle(n, assertion string) plugintest.CheckAnswer {
	b, _ := json.Marshal(checkapi.Response{
		Status:    checkapi.StatusOK,
		Identity:  &checkapi.Identity{Subject: "user" + n, Email: "user" + n + "@example.com"},
		Assertion: assertion,
		ExpiresAt: 4102444800,
	})
	return plugintest.CheckAnswer{Status: 200, Body: string(b)}
}

// toolList is a tools/list result of n tools, the middle one delete_everything.
func toolList(n int) string {
	var b strings.Builder
	b.WriteString(`{"jsonrpc":"2.0","id":2,"result":{"tools":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		name := "tool" + strconv.Itoa(i)
		if i == n/2 {
			name = "delete_everything"
		}
		b.WriteString(`{"name":"` + name + `","description":"` + strings.Repeat("d", 200) + `","inputSchema":{"type":"object"}}`)
	}
	b.WriteString(`]}}`)
	return b.String()
}

// loadCase returns stream i of the load and a check of its result ("" when right).
func loadCase(i int) (plugintest.Case, func(plugintest.Result) string) {
	const mcp = "mcp.example.com"
	postTo := func(authority, token, body string) plugintest.Request {
		return plugintest.Request{Method: "POST", Authority: authority, Path: "/mcp", Chunks: []string{body},
			Headers: [][2]string{{"content-type", "application/json"}, {"authorization", "Bearer " + token}}}
	}
	post := func(token, body string) plugintest.Request { return postTo(mcp, token, body) }
	forwarded := func(r plugintest.Result) string {
		if !r.Forwarded || r.Status != 0 || r.Upstream["authorization"] != "" ||
			!strings.HasPrefix(r.Upstream["x-gateway-assertion"], plugintest.AssertionForPrefix) {
			return "not forwarded with the assertion: status " + strconv.Itoa(r.Status) + " " + r.Body
		}
		return ""
	}
	listed := func(r plugintest.Result) string {
		if msg := forwarded(r); msg != "" {
			return msg
		}
		if strings.Contains(r.ClientBody, "delete_everything") || !strings.Contains(r.ClientBody, `"tool1"`) {
			return "tool list not filtered: " + r.ClientBody[:min(len(r.ClientBody), 200)]
		}
		return ""
	}
	response := [][2]string{{":status", "200"}, {"content-type", "application/json"}}
	switch i % loadKinds {
	case kindCached:
		return plugintest.Case{Request: post(plugintest.TokenAlice, plugintest.ToolsCallBody(1024))}, forwarded
	case kindUncached:
		return plugintest.Case{Request: post("user-"+strconv.Itoa(i), plugintest.ToolsCallBody(1024))}, forwarded
	case kindToolsList:
		return plugintest.Case{Request: postTo(plugintest.OpenHost, plugintest.TokenAlice, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`),
			Response: response, ResponseBody: []string{toolList(50)}}, listed
	case kindLargeBody:
		return plugintest.Case{Request: post(plugintest.TokenAlice, plugintest.ToolsCallBody(4000))}, forwarded
	case kindTooLarge:
		return plugintest.Case{Request: post(plugintest.TokenAlice, plugintest.ToolsCallBody(6000))}, func(r plugintest.Result) string {
			if r.Status != 413 || r.Forwarded {
				return "want 413, got " + strconv.Itoa(r.Status)
			}
			return ""
		}
	case kindDenied:
		return plugintest.Case{Request: post(plugintest.TokenAlice, `{"jsonrpc":"2.0","id":"call-9","method":"tools/call","params":{"name":"delete_everything","arguments":{}}}`)},
			func(r plugintest.Result) string {
				if r.Status != 200 || r.Forwarded || !strings.Contains(r.Body, `"isError":true`) || !strings.Contains(r.Body, "delete_everything") {
					return "want a 200 isError result, got " + strconv.Itoa(r.Status) + " " + r.Body
				}
				return ""
			}
	default: // kindBigList
		var chunks []string
		list := toolList(400)
		for len(list) > 16<<10 {
			chunks, list = append(chunks, list[:16<<10]), list[16<<10:]
		}
		return plugintest.Case{Request: postTo(plugintest.OpenHost, plugintest.TokenAlice, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`),
			Response: response, ResponseBody: append(chunks, list)}, listed
	}
}

// TestLegacyEnvoy_MixedLoadNeverCallsTheScheduler is the proof behind the Envoy releases
// docs/filter.md supports: thousands of streams on one VM of filter.wasm under
// host.CompatLegacy (proxy-wasm-cpp-host before #533, whose poll_oneoff answers ENOSYS, which
// the Go runtime treats as fatal, and is not allowed at all during _initialize or inside the
// allocator). First a burst of a thousand first-time users fills the decision cache with
// large bundles, then the clock moves past the cache TTL so that they are swept and the heap
// shrinks (the memory the runtime's background scavenger would return, arming the timer that
// starts the poller); then streams of every kind round robin. Every answer must be right, the
// VM must never fail, and the Go scheduler must not have called poll_oneoff or sched_yield
// once: the only poll_oneoff is the filter's own start probe in proxy_on_vm_start
// (host.StartProbe), answered ENOSYS, after which the VM never yields.
func TestLegacyEnvoy_MixedLoadNeverCallsTheScheduler(t *testing.T) {
	const burst, mixed = 1000, 400 * loadKinds
	var skew atomic.Int64 // added to the proxy's clock
	ctx := context.Background()
	check := &CheckServer{}
	answer := userAnswer
	check.answer.Store(&answer)
	h, err := NewHost(ctx, wasmbuild.Module(t), check, func(o *host.Options) {
		o.Compat = host.CompatLegacy
		o.TraceSchedulerCalls = true
		o.LogLevel = host.LogWarn
		o.Now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	run := func(phase string, i int, c plugintest.Case, want func(plugintest.Result) string) {
		t.Helper()
		r, err := send(ctx, h, check, c)
		if failed, why := h.Failed(0); failed {
			t.Fatalf("%s stream %d: the VM failed: %v\nscheduler calls:\n%s", phase, i, why, host.FormatSchedulerCalls(h.SchedulerCalls()))
		}
		if err != nil {
			t.Fatalf("%s stream %d: %v", phase, i, err)
		}
		if msg := want(r); msg != "" {
			t.Fatalf("%s stream %d (kind %d): %s", phase, i, i%loadKinds, msg)
		}
	}
	for i := range burst {
		c, want := loadCase(kindUncached)
		c.Request.Headers[1][1] = "Bearer burst-" + strconv.Itoa(i)
		run("burst", i, c, want)
	}
	peak := h.MemoryBytes(0)
	skew.Store(int64(time.Hour)) // every burst bundle has expired; the next cache write sweeps them
	for i := range mixed {
		c, want := loadCase(i)
		run("mixed", i, c, want)
	}
	if calls := host.WithoutStartProbe(h.SchedulerCalls(), 1); len(calls) != 0 || h.PollOneoffCalls() != 1 {
		t.Fatalf("the Go scheduler called the host:\n%s", host.FormatSchedulerCalls(calls))
	}
	if n := check.Calls.Load(); n < burst+mixed/loadKinds {
		t.Fatalf("%d check calls, want at least one per first-time user (%d)", n, burst+mixed/loadKinds)
	}
	t.Logf("%d streams; linear memory %d KiB after the burst, %d KiB at the end", burst+mixed, peak>>10, h.MemoryBytes(0)>>10)
}
