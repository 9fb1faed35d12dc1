package host

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestCompile_RejectsModulesEnvoyWouldRefuse(t *testing.T) {
	t.Parallel()
	fill := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = 0x7f
		}
		return b
	}
	logSig := wasmFunc{params: fill(3), results: fill(1)}
	tests := []struct {
		name    string
		imports []wasmImport
		exports []wasmExport
		want    string
	}{
		{"no ABI marker", nil, []wasmExport{{name: "proxy_on_memory_allocate", typ: allocFn}},
			"missing or unknown Proxy-Wasm ABI version"},
		{"ABI 0.1.0", nil, minimalExports("proxy_abi_version_0_1_0"), "ABI 0.1.0 is not emulated"},
		{"no allocator", nil, []wasmExport{{name: "proxy_abi_version_0_2_1", typ: voidFn}}, "missing malloc"},
		{"unknown host call", []wasmImport{{"env", "proxy_teleport", logSig}}, minimalExports("proxy_abi_version_0_2_1"),
			"missing import: env.proxy_teleport"},
		{"unknown WASI call", []wasmImport{{"wasi_snapshot_preview1", "fd_teleport", logSig}}, minimalExports("proxy_abi_version_0_2_1"),
			"missing import: wasi_snapshot_preview1.fd_teleport"},
		{"wrong signature", []wasmImport{{"env", "proxy_log", wasmFunc{params: fill(2), results: fill(1)}}}, minimalExports("proxy_abi_version_0_2_1"),
			"import type mismatch: env.proxy_log"},
		{"WASI path_link as the spec has it", []wasmImport{{"wasi_snapshot_preview1", "path_link", wasmFunc{params: fill(7), results: fill(1)}}},
			minimalExports("proxy_abi_version_0_2_1"), "import type mismatch: wasi_snapshot_preview1.path_link"},
		{"get_log_level under ABI 0.2.0", []wasmImport{{"env", "proxy_get_log_level", wasmFunc{params: fill(1), results: fill(1)}}},
			minimalExports("proxy_abi_version_0_2_0"), "missing import: env.proxy_get_log_level"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compile(context.Background(), buildModule(tc.imports, tc.exports), &CompileOptions{Interpreter: true})
			if !errors.Is(err, ErrBadModule) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Compile error = %v, want ErrBadModule containing %q", err, tc.want)
			}
		})
	}
}

func TestNew_LegacyCompatLacksNewerWASICalls(t *testing.T) {
	t.Parallel()
	wasm := buildModule([]wasmImport{{"wasi_snapshot_preview1", "fd_filestat_get", wasmFunc{params: []byte{0x7f, 0x7f}, results: []byte{0x7f}}}},
		minimalExports("proxy_abi_version_0_2_1"))
	m, err := Compile(context.Background(), wasm, &CompileOptions{Interpreter: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	if _, err := New(context.Background(), m, Options{Compat: CompatLegacy}); !errors.Is(err, ErrBadModule) ||
		!strings.Contains(err.Error(), "fd_filestat_get") {
		t.Fatalf("New(CompatLegacy) error = %v, want missing fd_filestat_get", err)
	}
	h, err := New(context.Background(), m, Options{})
	if err != nil {
		t.Fatalf("New(CompatCurrent): %v", err)
	}
	h.Close()
}

func TestNew_ModuleWithoutCallbacksPassesStreamsThrough(t *testing.T) {
	t.Parallel()
	m, err := Compile(context.Background(), buildModule(nil, minimalExports("proxy_abi_version_0_2_1")), &CompileOptions{Interpreter: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	h, err := New(context.Background(), m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	s := stream(t, h)
	r, err := s.SendRequestHeaders(testCtx(t), get("/"), true)
	if err != nil || !r.EndOfStream || r.Headers.Value(":path") != "/" {
		t.Fatalf("SendRequestHeaders = %+v, %v", r, err)
	}
}

func TestNew_RestrictedCallDuringInitializeTraps(t *testing.T) {
	t.Parallel()
	_, err := New(context.Background(), testGuest(t), Options{Env: map[string]string{"GUEST_INIT_CALL": "define_metric"}})
	var te *TrapError
	if !errors.As(err, &te) || te.Reason != "restricted_callback" || !strings.Contains(te.Func, "env.proxy_define_metric") ||
		!errors.Is(err, ErrVMFailed) {
		t.Fatalf("New error = %v, want a restricted_callback trap in env.proxy_define_metric", err)
	}
	h := newHost(t, Options{Env: map[string]string{"GUEST_INIT_CALL": "log"}})
	waitLog(t, h, "init log") // proxy_log is allowed during _initialize
}

func TestNew_StartFailures(t *testing.T) {
	t.Parallel()
	for name, opts := range map[string]Options{
		"vm start":  {VMConfig: []byte("fail-start")},
		"configure": {PluginConfig: []byte("fail-configure")},
	} {
		if _, err := New(context.Background(), testGuest(t), opts); !errors.Is(err, ErrStartFailed) {
			t.Errorf("%s: New error = %v, want ErrStartFailed", name, err)
		}
	}
}

func TestNew_StartupOrderAndConfiguration(t *testing.T) {
	t.Parallel()
	h := newHost(t, Options{VMConfig: []byte("vmc"), PluginConfig: []byte(`{"k":1}`), Env: map[string]string{"GOGC": "50"}})
	logs := h.GuestLogs(LogInfo)
	if len(logs) < 2 || logs[0] != "vm start config=vmc" || logs[1] != `configured: {"k":1}` {
		t.Fatalf("start-up logs = %q", logs)
	}
}

// The guest's "timer-gc" leaves a timer pending and collects garbage, so its runtime polls at
// every stop-the-world whatever the machine's load ("sleep" polls only if the sleep is not
// over by the time the scheduler looks, which a loaded machine can make it be).
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
