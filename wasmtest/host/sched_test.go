package host

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
)

// The guest's "timer-gc" leaves a timer pending and collects garbage, so its runtime polls at
// every stop-the-world whatever the machine's load. (A 2 ms sleep, which this test used
// before, polls only if the sleep is not over when the scheduler first looks at its timers —
// runtime.(*timers).check runs an expired timer instead — and a thread descheduled for 2 ms
// on a loaded machine made the legacy VM survive and the current host count no poll.)
func TestPollOneoff_LegacyStubKillsGoGuestsCurrentStubWorks(t *testing.T) {
	t.Parallel()
	t.Run("current", func(t *testing.T) {
		t.Parallel()
		h := newHost(t, Options{TraceSchedulerCalls: true})
		r, err := stream(t, h).SendRequestHeaders(testCtx(t), get("/", "x-test", "timer-gc"), true)
		if err != nil || r.Reply != nil || !r.EndOfStream {
			t.Fatalf("timer and GC in a callback: %+v, %v", r, err)
		}
		waitLog(t, h, "collected")
		calls := h.SchedulerCalls()
		if calls[SchedulerCall{Import: "poll_oneoff", Entry: "proxy_on_request_headers", Wait: "clock 0"}] == 0 || h.PollOneoffCalls() == 0 {
			t.Errorf("no zero-timeout poll_oneoff in proxy_on_request_headers; scheduler calls:\n%s", FormatSchedulerCalls(calls))
		}
	})
	t.Run("legacy", func(t *testing.T) {
		t.Parallel()
		h := newHost(t, Options{Compat: CompatLegacy})
		r, err := stream(t, h).SendRequestHeaders(testCtx(t), get("/", "x-test", "timer-gc"), true)
		if err != nil || r.Reply == nil || r.Reply.Status != 503 || r.Reply.Details != "wasm_fail_stream" {
			t.Fatalf("timer and GC under the ENOSYS stub: %+v, %v; want a 503 wasm_fail_stream", r, err)
		}
		failed, why := h.Failed(0)
		if !failed {
			t.Fatal("VM not failed")
		}
		waitLog(t, h, "poll_oneoff failed") // the Go runtime's fatal error, written to stderr
		t.Logf("failure: %v", why)
	})
	t.Run("legacy init", func(t *testing.T) {
		t.Parallel()
		// Before #533 poll_oneoff was not even allowed during _initialize.
		_, err := New(context.Background(), testGuest(t), Options{Compat: CompatLegacy, Env: map[string]string{"GUEST_INIT_CALL": "timer-gc"}})
		var te *TrapError
		if !errors.As(err, &te) || te.Reason != "restricted_callback" || !strings.Contains(te.Func, "poll_oneoff") {
			t.Fatalf("New error = %v, want restricted poll_oneoff", err)
		}
		h := newHost(t, Options{TraceSchedulerCalls: true, Env: map[string]string{"GUEST_INIT_CALL": "timer-gc"}})
		if calls := h.SchedulerCalls(); calls[SchedulerCall{Import: "poll_oneoff", Entry: "_initialize", Wait: "clock 0"}] == 0 {
			t.Errorf("no zero-timeout poll_oneoff during _initialize; scheduler calls:\n%s", FormatSchedulerCalls(calls))
		}
	})
}

// TestTraceSchedulerCalls_NamesTheExportsInProgress checks the trace's attribution: the polls
// of "timer-gc" (zero timeouts at the stop-the-worlds, a timeout while the collection waits
// for its mark) are counted inside the callback that ran it, and nothing is counted without
// the option.
func TestTraceSchedulerCalls_NamesTheExportsInProgress(t *testing.T) {
	t.Parallel()
	off := newHost(t, Options{})
	if _, err := stream(t, off).SendRequestHeaders(testCtx(t), get("/", "x-test", "timer-gc"), true); err != nil {
		t.Fatal(err)
	}
	if calls := off.SchedulerCalls(); len(calls) != 0 || off.PollOneoffCalls() == 0 {
		t.Errorf("without the option: %v (poll_oneoff calls %d), want nothing counted", calls, off.PollOneoffCalls())
	}
	h := newHost(t, Options{TraceSchedulerCalls: true})
	if _, err := stream(t, h).SendRequestHeaders(testCtx(t), get("/", "x-test", "timer-gc"), true); err != nil {
		t.Fatal(err)
	}
	t.Logf("scheduler calls:\n%s", FormatSchedulerCalls(h.SchedulerCalls()))
	for c := range h.SchedulerCalls() {
		if c.Entry != "proxy_on_request_headers" || c.Import != "poll_oneoff" || (c.Wait != "clock 0" && c.Wait != "clock > 0") {
			t.Errorf("unexpected %v", c)
		}
	}
	want := "poll_oneoff[clock 0] in proxy_on_request_headers"
	if got := FormatSchedulerCalls(h.SchedulerCalls()); !strings.Contains(got, " × "+want+"\n") {
		t.Errorf("FormatSchedulerCalls = %q, want a line for %q", got, want)
	}
	if got := (SchedulerCall{Import: "sched_yield"}).String(); got != "sched_yield outside any export" {
		t.Errorf("String() = %q", got)
	}
}

// runtimeMetrics asks the guest for the runtime's counters ("runtime-metrics").
func runtimeMetrics(t *testing.T, h *Host) map[string]int64 {
	t.Helper()
	if _, err := stream(t, h).SendRequestHeaders(testCtx(t), get("/", "x-test", "runtime-metrics"), true); err != nil {
		t.Fatal(err)
	}
	var line string
	for _, l := range h.GuestLogs(LogInfo) {
		if strings.HasPrefix(l, "metrics gc=") {
			line = l // the last one
		}
	}
	m := map[string]int64{}
	for _, f := range strings.Fields(strings.TrimPrefix(line, "metrics ")) {
		k, v, _ := strings.Cut(f, "=")
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		m[k] = n
	}
	return m
}

// TestPollOneoff_OnlyACallbackThatYieldsStartsThePoller pins the runtime behaviour the
// filter's Envoy support rests on (docs/filter.md): in a module that starts no timer, only
// the background scavenger can start the poller (it arms a timer to pace itself after
// returning memory), and it runs only when a callback yields to the scheduler. Callbacks that
// never block leave it waiting however much freed memory there is: on the ENOSYS stub, ten
// 16 MiB spikes and drops and dozens of collections later it has had no CPU and nothing has
// polled. One runtime.Gosched lets it run; it arms its timer, and from then on every
// collection in any callback polls.
func TestPollOneoff_OnlyACallbackThatYieldsStartsThePoller(t *testing.T) {
	t.Parallel()
	send := func(t *testing.T, h *Host, mode string) {
		t.Helper()
		r, err := stream(t, h).SendRequestHeaders(testCtx(t), get("/", "x-test", mode), true)
		if failed, why := h.Failed(0); err != nil || r.Reply != nil || failed {
			t.Fatalf("%s: %+v, %v, VM failed: %v\nscheduler calls:\n%s", mode, r.Reply, err, why, FormatSchedulerCalls(h.SchedulerCalls()))
		}
	}
	// spikeAndChurn repeats: 16 MiB live, dropped, then churns of 2 MiB of garbage; it ends
	// with the freed memory waiting for the scavenger.
	spikeAndChurn := func(t *testing.T, h *Host, cycles, churns int) map[string]int64 {
		t.Helper()
		for range cycles {
			send(t, h, "spike")
			send(t, h, "drop")
			for range churns {
				send(t, h, "churn")
			}
		}
		m := runtimeMetrics(t, h)
		if m["free"] < 8<<20 || m["free"] < 2*m["goal"] {
			t.Fatalf("the set-up did not leave the scavenger work: %v", m)
		}
		if m["scavenger_ns"] != 0 || len(h.SchedulerCalls()) != 0 {
			t.Fatalf("the scavenger ran (%v) or the scheduler called the host:\n%s", m, FormatSchedulerCalls(h.SchedulerCalls()))
		}
		return m
	}
	t.Run("never blocking", func(t *testing.T) {
		t.Parallel()
		h := newHost(t, Options{Compat: CompatLegacy, TraceSchedulerCalls: true})
		m := spikeAndChurn(t, h, 10, 10)
		if m["gc"] < 40 {
			t.Fatalf("too few collections to show anything: %v", m)
		}
		t.Logf("runtime after the churn: %v", m)
	})
	t.Run("one yield", func(t *testing.T) {
		t.Parallel()
		h := newHost(t, Options{TraceSchedulerCalls: true})
		spikeAndChurn(t, h, 1, 30)
		send(t, h, "yield")
		for range 4 {
			send(t, h, "churn") // collections, nothing that blocks
		}
		polls := h.SchedulerCalls()[SchedulerCall{Import: "poll_oneoff", Entry: "proxy_on_request_headers", Wait: "clock 0"}]
		m := runtimeMetrics(t, h)
		if m["scavenger_ns"] == 0 || polls == 0 {
			t.Fatalf("after a yield: %v, scheduler calls:\n%s", m, FormatSchedulerCalls(h.SchedulerCalls()))
		}
		t.Logf("runtime after the yield and churn: %v; scheduler calls:\n%s", m, FormatSchedulerCalls(h.SchedulerCalls()))
	})
}
