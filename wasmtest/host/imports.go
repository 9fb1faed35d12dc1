package host

import (
	"context"
	"fmt"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

const (
	i32 = api.ValueTypeI32
	i64 = api.ValueTypeI64
)

// Import module names. cpp-host registers every WASI function under both names.
const (
	modEnv          = "env"
	modWASI         = "wasi_snapshot_preview1"
	modWASIUnstable = "wasi_unstable"
)

// hostFunc is one host function the host provides to guests.
type hostFunc struct {
	module  string
	name    string
	params  []api.ValueType
	results []api.ValueType
	fn      func(v *vm, stack []uint64)
	// legacy reports that cpp-host already provided the function before #533 (the WASI
	// functions of #427). Functions without it fail to link in CompatLegacy.
	legacy bool
	// abi021 marks functions that cpp-host links only for ABI 0.2.1 (proxy_get_log_level).
	abi021 bool
}

// key is "module.name", the form cpp-host's allowlists use.
func (f *hostFunc) key() string { return f.module + "." + f.name }

// sig returns a readable signature for error messages.
func sig(params, results []api.ValueType) string {
	s := "("
	for i, p := range params {
		if i > 0 {
			s += ","
		}
		s += api.ValueTypeName(p)
	}
	s += ")->("
	for i, r := range results {
		if i > 0 {
			s += ","
		}
		s += api.ValueTypeName(r)
	}
	return s + ")"
}

// ps builds a parameter list of n i32s.
func ps(n int) []api.ValueType {
	p := make([]api.ValueType, n)
	for i := range p {
		p[i] = i32
	}
	return p
}

var r1 = []api.ValueType{i32}

// envFuncs lists the proxy_* host calls of ABI 0.2.x plus the two emscripten helpers that
// cpp-host always registers.
func envFuncs() []hostFunc {
	return []hostFunc{
		{name: "proxy_log", params: ps(3), fn: hLog},
		{name: "proxy_get_log_level", params: ps(1), fn: hGetLogLevel, abi021: true},
		{name: "proxy_get_current_time_nanoseconds", params: ps(1), fn: hGetCurrentTime},
		{name: "proxy_set_tick_period_milliseconds", params: ps(1), fn: hSetTickPeriod},
		{name: "proxy_done", params: ps(0), fn: hDone},
		{name: "proxy_set_effective_context", params: ps(1), fn: hSetEffectiveContext},
		{name: "proxy_get_status", params: ps(3), fn: hGetStatus},
		{name: "proxy_get_buffer_bytes", params: ps(5), fn: hGetBufferBytes},
		{name: "proxy_get_buffer_status", params: ps(3), fn: hGetBufferStatus},
		{name: "proxy_set_buffer_bytes", params: ps(5), fn: hSetBufferBytes},
		{name: "proxy_get_header_map_value", params: ps(5), fn: hGetHeaderMapValue},
		{name: "proxy_add_header_map_value", params: ps(5), fn: hAddHeaderMapValue},
		{name: "proxy_replace_header_map_value", params: ps(5), fn: hReplaceHeaderMapValue},
		{name: "proxy_remove_header_map_value", params: ps(3), fn: hRemoveHeaderMapValue},
		{name: "proxy_get_header_map_pairs", params: ps(3), fn: hGetHeaderMapPairs},
		{name: "proxy_set_header_map_pairs", params: ps(3), fn: hSetHeaderMapPairs},
		{name: "proxy_get_header_map_size", params: ps(2), fn: hGetHeaderMapSize},
		{name: "proxy_continue_stream", params: ps(1), fn: hContinueStream},
		{name: "proxy_close_stream", params: ps(1), fn: hCloseStream},
		{name: "proxy_send_local_response", params: ps(8), fn: hSendLocalResponse},
		{name: "proxy_http_call", params: ps(10), fn: hHTTPCall},
		{name: "proxy_get_shared_data", params: ps(5), fn: hGetSharedData},
		{name: "proxy_set_shared_data", params: ps(5), fn: hSetSharedData},
		{name: "proxy_define_metric", params: ps(4), fn: hDefineMetric},
		{name: "proxy_increment_metric", params: []api.ValueType{i32, i64}, fn: hIncrementMetric},
		{name: "proxy_record_metric", params: []api.ValueType{i32, i64}, fn: hRecordMetric},
		{name: "proxy_get_metric", params: ps(2), fn: hGetMetric},
		{name: "proxy_get_property", params: ps(4), fn: hGetProperty},
		{name: "proxy_set_property", params: ps(4), fn: hSetProperty},
		{name: "proxy_call_foreign_function", params: ps(6), fn: hCallForeignFunction},
		// Not emulated: shared queues and gRPC answer UNIMPLEMENTED (Envoy implements them).
		{name: "proxy_register_shared_queue", params: ps(3), fn: hUnimplemented},
		{name: "proxy_resolve_shared_queue", params: ps(5), fn: hUnimplemented},
		{name: "proxy_enqueue_shared_queue", params: ps(3), fn: hUnimplemented},
		{name: "proxy_dequeue_shared_queue", params: ps(3), fn: hUnimplemented},
		{name: "proxy_grpc_call", params: ps(12), fn: hUnimplemented},
		{name: "proxy_grpc_stream", params: ps(9), fn: hUnimplemented},
		{name: "proxy_grpc_send", params: ps(4), fn: hUnimplemented},
		{name: "proxy_grpc_cancel", params: ps(1), fn: hUnimplemented},
		{name: "proxy_grpc_close", params: ps(1), fn: hUnimplemented},
		{name: "pthread_equal", params: ps(2), fn: hPthreadEqual},
		{name: "emscripten_notify_memory_growth", params: ps(1), fn: hNoop, legacy: true},
	}
}

// wasiFuncs lists cpp-host's WASI functions with its exact signatures (some differ from the
// WASI specification: path_link takes 6 parameters, path_symlink 4), so a module that imports
// a function with another signature fails to link here as it would in Envoy.
func wasiFuncs() []hostFunc {
	w := func(name string, params []api.ValueType, fn func(*vm, []uint64), legacy bool) hostFunc {
		return hostFunc{name: name, params: params, results: r1, fn: fn, legacy: legacy}
	}
	return []hostFunc{
		w("fd_write", ps(4), wFdWrite, true),
		w("fd_read", ps(4), wReturn(errnoNosys), true),
		w("fd_seek", []api.ValueType{i32, i64, i32, i32}, wFdSeek, true),
		w("fd_close", ps(1), wFdClose, true),
		w("fd_fdstat_get", ps(2), wFdFdstatGet, true),
		w("fd_fdstat_set_flags", ps(2), wReturn(errnoNosys), true),
		w("fd_prestat_get", ps(2), wReturn(errnoBadf), true),
		w("fd_prestat_dir_name", ps(3), wReturn(errnoNosys), true),
		w("environ_get", ps(2), wEnvironGet, true),
		w("environ_sizes_get", ps(2), wEnvironSizesGet, true),
		w("args_get", ps(2), wReturn(errnoSuccess), true),
		w("args_sizes_get", ps(2), wArgsSizesGet, true),
		w("clock_time_get", []api.ValueType{i32, i64, i32}, wClockTimeGet, true),
		w("random_get", ps(2), wRandomGet, true),
		w("sched_yield", nil, wSchedYield, true),
		w("poll_oneoff", ps(4), wPollOneoff, true),
		{name: "proc_exit", params: ps(1), fn: wProcExit, legacy: true},
		w("path_open", []api.ValueType{i32, i32, i32, i32, i32, i64, i64, i32, i32}, wReturn(errnoNoent), true),
		// Added by cpp-host #533.
		w("clock_res_get", ps(2), wClockResGet, false),
		w("fd_advise", []api.ValueType{i32, i64, i64, i32}, wReturn(errnoSuccess), false),
		w("fd_allocate", []api.ValueType{i32, i64, i64}, wStdioOnly(errnoSuccess), false),
		w("fd_datasync", ps(1), wStdioOnly(errnoSuccess), false),
		w("fd_fdstat_set_rights", []api.ValueType{i32, i64, i64}, wStdioOnly(errnoSuccess), false),
		w("fd_filestat_get", ps(2), wReturn(errnoBadf), false),
		w("fd_filestat_set_size", []api.ValueType{i32, i64}, wStdioOnly(errnoSuccess), false),
		w("fd_filestat_set_times", []api.ValueType{i32, i64, i64, i32}, wStdioOnly(errnoSuccess), false),
		w("fd_pread", []api.ValueType{i32, i32, i32, i64, i32}, wReturn(errnoNosys), false),
		w("fd_pwrite", []api.ValueType{i32, i32, i32, i64, i32}, wFdPwrite, false),
		w("fd_readdir", []api.ValueType{i32, i32, i32, i64, i32}, wFdReaddir, false),
		w("fd_renumber", ps(2), wFdRenumber, false),
		w("fd_sync", ps(1), wStdioOnly(errnoSuccess), false),
		w("fd_tell", ps(2), wFdTell, false),
		w("path_create_directory", ps(3), wReturn(errnoNotsup), false),
		w("path_filestat_get", ps(5), wReturn(errnoNotsup), false),
		w("path_filestat_set_times", []api.ValueType{i32, i32, i32, i32, i64, i64, i32}, wReturn(errnoNotsup), false),
		w("path_link", ps(6), wReturn(errnoNotsup), false),
		w("path_readlink", ps(6), wPathReadlink, false),
		w("path_remove_directory", ps(3), wReturn(errnoNotsup), false),
		w("path_rename", ps(6), wReturn(errnoNotsup), false),
		w("path_symlink", ps(4), wReturn(errnoNotsup), false),
		w("path_unlink_file", ps(3), wReturn(errnoNotsup), false),
		w("sock_accept", ps(3), wSockAccept, false),
		w("sock_recv", ps(6), wSockRecv, false),
		w("sock_send", ps(5), wSockSend, false),
		w("sock_shutdown", ps(2), wReturn(errnoNotsup), false),
	}
}

// funcTable is the complete, immutable list of host functions, indexed by position.
type funcTable struct {
	funcs []hostFunc
	byKey map[string]int
	// allow lists, indexed like funcs, per compatibility mode.
	initAllow  [compatModes][]bool
	allocAllow [compatModes][]bool
}

// newFuncTable builds the table and the restricted-callback allowlists of cpp-host.
func newFuncTable() *funcTable {
	t := &funcTable{byKey: map[string]int{}}
	for _, f := range envFuncs() {
		f.module = modEnv
		if f.results == nil {
			f.results = r1
		}
		if f.name == "emscripten_notify_memory_growth" {
			f.results = nil
		}
		t.add(f)
	}
	for _, mod := range []string{modWASI, modWASIUnstable} {
		for _, f := range wasiFuncs() {
			f.module = mod
			if f.name == "proc_exit" {
				f.results = nil
			}
			t.add(f)
		}
	}
	for c := Compat(0); c < compatModes; c++ {
		t.initAllow[c] = t.allowList(initAllowed(c))
		t.allocAllow[c] = t.allowList(allocAllowed(c))
	}
	return t
}

func (t *funcTable) add(f hostFunc) {
	t.byKey[f.key()] = len(t.funcs)
	t.funcs = append(t.funcs, f)
}

func (t *funcTable) allowList(names []string) []bool {
	l := make([]bool, len(t.funcs))
	for _, n := range names {
		for _, mod := range []string{modWASI, modWASIUnstable} {
			if i, ok := t.byKey[mod+"."+n]; ok {
				l[i] = true
			}
		}
		if i, ok := t.byKey[modEnv+"."+n]; ok {
			l[i] = true
		}
	}
	return l
}

// initAllowed is the list of host calls allowed during _initialize/main (cpp-host
// WasmBase::startVm). WASI names are given without module; they apply to both.
func initAllowed(c Compat) []string {
	base := []string{
		"emscripten_notify_memory_growth", "proxy_log", "fd_write",
		"args_sizes_get", "args_get", "environ_sizes_get", "environ_get",
		"clock_time_get", "random_get", "fd_fdstat_get", "fd_fdstat_set_flags",
		"fd_prestat_get", "fd_prestat_dir_name",
	}
	if c == CompatLegacy {
		return base
	}
	return append(base, "clock_res_get", "poll_oneoff",
		"fd_advise", "fd_allocate", "fd_datasync", "fd_fdstat_set_rights", "fd_filestat_get",
		"fd_filestat_set_size", "fd_filestat_set_times", "fd_pread", "fd_pwrite", "fd_readdir",
		"fd_renumber", "fd_sync", "fd_tell", "path_create_directory", "path_filestat_get",
		"path_filestat_set_times", "path_link", "path_readlink", "path_remove_directory",
		"path_rename", "path_symlink", "path_unlink_file", "sock_accept", "sock_recv",
		"sock_send", "sock_shutdown")
}

// allocAllowed is the list of host calls allowed inside the guest allocator (cpp-host
// WasmBase::allocMemory).
func allocAllowed(c Compat) []string {
	base := []string{"proxy_log", "fd_write", "clock_time_get"}
	if c == CompatLegacy {
		return base
	}
	return append(base, "poll_oneoff")
}

// vmKey is the context key under which guest calls carry their *vm.
type vmKey struct{}

// instantiateHostModules registers env, wasi_snapshot_preview1 and wasi_unstable in r. Every
// function finds the calling VM in the call's context, so one set of host modules serves all
// Hosts and VMs created from a Module.
func (t *funcTable) instantiateHostModules(ctx context.Context, r wazero.Runtime) error {
	for _, mod := range []string{modEnv, modWASI, modWASIUnstable} {
		b := r.NewHostModuleBuilder(mod)
		for i := range t.funcs {
			f := &t.funcs[i]
			if f.module != mod {
				continue
			}
			b.NewFunctionBuilder().
				WithGoModuleFunction(t.goFunc(i), f.params, f.results).
				WithName(f.name).
				Export(f.name)
		}
		if _, err := b.Instantiate(ctx); err != nil {
			return fmt.Errorf("instantiate host module %s: %w", mod, err)
		}
	}
	return nil
}

// goFunc wraps the host function at index i: it finds the VM, enforces the restricted
// allowlist (trapping like cpp-host's "restricted_callback"), and runs the function.
func (t *funcTable) goFunc(i int) api.GoModuleFunc {
	f := &t.funcs[i]
	return func(ctx context.Context, m api.Module, stack []uint64) {
		v, _ := ctx.Value(vmKey{}).(*vm)
		if v == nil {
			panic(fmt.Errorf("host function %s called outside a host-managed call", f.key()))
		}
		if v.restricted != nil && !v.restricted[i] {
			panic(&TrapError{Func: f.key(), Reason: "restricted_callback"})
		}
		f.fn(v, stack)
	}
}

func hUnimplemented(v *vm, s []uint64) { s[0] = uint64(StatusUnimplemented) }
func hNoop(v *vm, s []uint64)          {}
func hPthreadEqual(v *vm, s []uint64) {
	if uint32(s[0]) == uint32(s[1]) {
		s[0] = 1
	} else {
		s[0] = 0
	}
}
