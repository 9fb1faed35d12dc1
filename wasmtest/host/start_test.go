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
