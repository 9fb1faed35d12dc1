package host

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero/api"
)

// vm is one instance of the module: Envoy's per-worker Wasm VM. All calls into it, and all
// state below mu, are serialized by mu (a VM is single-threaded).
type vm struct {
	host   *Host
	worker int
	gen    int // how many times the worker's VM has been recreated (FailReload)

	mu  sync.Mutex
	mod api.Module
	mem api.Memory
	ctx context.Context // carries *vm for the host functions

	exp     exports
	entries []string  // guest exports in progress, outermost first (Options.TraceSchedulerCalls)
	stack   [8]uint64 // parameters and results of top-level calls
	alloc   [1]uint64 // parameters and result of the allocator (re-entrant)

	failed  atomic.Bool
	failErr error
	closed  bool // the instance was released (Host.Close, or replaced after a failure)

	// restricted is the allowlist in force (indexed like funcTable.funcs), nil when every
	// host call is allowed.
	restricted []bool

	rootID    uint32
	nextCtxID uint32
	streams   map[uint32]*Stream
	current   uint32 // context whose callback is running (0: the VM context)
	effective uint32 // set by proxy_set_effective_context for the running callback

	// after holds the actions host calls deferred until the running callback returns
	// (cpp-host's addAfterVmCallAction): continue, local reply, reset.
	after []func()
	// stopNext is set by proxy_send_local_response: the callback's result becomes "stop".
	stopNext bool

	// configuring is true during startup, when PLUGIN_CONFIGURATION is readable.
	configuring bool

	// http_call state.
	nextCallID uint32
	calls      map[uint32]context.CancelFunc
	callResp   *callResponse // the response being delivered, during the callback only
	statusCode uint32
	statusMsg  string

	metricIDs     map[uint32]*metric
	nextMetricIDs [3]uint32

	// names are the header and property names the guest has passed (vm.name).
	names map[string]string

	tickPeriod time.Duration
	tickStop   chan struct{}
}

// exports holds the guest functions the host calls; nil when not exported.
type exports struct {
	initialize, start, main, mainVoid, malloc                                api.Function
	onContextCreate, onVMStart, onConfigure, onTick, onDone, onLog, onDelete api.Function
	onRequestHeaders, onRequestBody, onRequestTrailers                       api.Function
	onResponseHeaders, onResponseBody, onResponseTrailers                    api.Function
	onHTTPCallResponse                                                       api.Function
}

func (v *vm) lookupExports() {
	f := v.mod.ExportedFunction
	e := &v.exp
	e.initialize, e.start, e.main, e.mainVoid = f("_initialize"), f("_start"), f("main"), f("__main_void")
	// cpp-host prefers a "malloc" export over proxy_on_memory_allocate.
	if e.malloc = f("malloc"); e.malloc == nil {
		e.malloc = f("proxy_on_memory_allocate")
	}
	e.onContextCreate, e.onVMStart, e.onConfigure = f("proxy_on_context_create"), f("proxy_on_vm_start"), f("proxy_on_configure")
	e.onTick, e.onDone, e.onLog, e.onDelete = f("proxy_on_tick"), f("proxy_on_done"), f("proxy_on_log"), f("proxy_on_delete")
	e.onRequestHeaders, e.onRequestBody, e.onRequestTrailers = f("proxy_on_request_headers"), f("proxy_on_request_body"), f("proxy_on_request_trailers")
	e.onResponseHeaders, e.onResponseBody, e.onResponseTrailers = f("proxy_on_response_headers"), f("proxy_on_response_body"), f("proxy_on_response_trailers")
	e.onHTTPCallResponse = f("proxy_on_http_call_response")
}

// startVM instantiates the module and starts the plugin the way cpp-host does: _initialize
// (then main or __main_void if exported) under the start-up allowlist,
// proxy_on_context_create(root, 0), proxy_on_vm_start, proxy_on_configure.
func (h *Host) startVM(ctx context.Context, worker, gen int) (*vm, error) {
	mod, err := h.mod.instantiate(ctx)
	if err != nil {
		return nil, err
	}
	v := &vm{
		host:          h,
		worker:        worker,
		gen:           gen,
		mod:           mod,
		mem:           mod.Memory(),
		streams:       map[uint32]*Stream{},
		calls:         map[uint32]context.CancelFunc{},
		metricIDs:     map[uint32]*metric{},
		nextMetricIDs: [3]uint32{metricCounter, metricGauge, metricHistogram},
	}
	v.ctx = context.WithValue(context.Background(), vmKey{}, v)
	v.lookupExports()
	v.mu.Lock()
	defer v.mu.Unlock()
	if err := v.start(); err != nil {
		v.closeLocked()
		return nil, err
	}
	return v, nil
}

func (v *vm) start() error {
	tbl := v.host.mod.table
	v.restricted = tbl.initAllow[v.host.opts.Compat]
	switch {
	case v.exp.initialize != nil:
		if _, err := v.call(v.exp.initialize, "_initialize"); err != nil {
			return err
		}
		if v.exp.main != nil {
			if _, err := v.call(v.exp.main, "main", 0, 0); err != nil {
				return err
			}
		} else if v.exp.mainVoid != nil {
			if _, err := v.call(v.exp.mainVoid, "__main_void"); err != nil {
				return err
			}
		}
	case v.exp.start != nil:
		if _, err := v.call(v.exp.start, "_start"); err != nil {
			return err
		}
	}
	v.restricted = nil

	v.rootID = v.allocContextID()
	v.current = v.rootID
	v.configuring = true
	defer func() { v.configuring = false }()
	if v.exp.onContextCreate != nil {
		if _, err := v.call(v.exp.onContextCreate, "proxy_on_context_create", uint64(v.rootID), 0); err != nil {
			return err
		}
		v.runAfter()
	}
	if v.exp.onVMStart != nil {
		ok, err := v.call(v.exp.onVMStart, "proxy_on_vm_start", uint64(v.rootID), uint64(len(v.host.opts.VMConfig)))
		if err != nil {
			return err
		}
		v.runAfter()
		if uint32(ok) == 0 {
			return fmt.Errorf("%w: proxy_on_vm_start returned false", ErrStartFailed)
		}
	}
	if v.exp.onConfigure != nil {
		ok, err := v.call(v.exp.onConfigure, "proxy_on_configure", uint64(v.rootID), uint64(len(v.host.opts.PluginConfig)))
		if err != nil {
			return err
		}
		v.runAfter()
		if uint32(ok) == 0 {
			return fmt.Errorf("%w: proxy_on_configure returned false", ErrStartFailed)
		}
	}
	return nil
}

// allocContextID returns the next unused context id (cpp-host allocContextId).
func (v *vm) allocContextID() uint32 {
	for {
		v.nextCtxID++
		id := v.nextCtxID
		if id == 0 || id == v.rootID {
			continue
		}
		if _, used := v.streams[id]; !used {
			return id
		}
	}
}

// call runs a guest export with mu held. A trap (or a failed host call inside it) marks the VM
// failed and returns a *TrapError; once failed, nothing more is called.
func (v *vm) call(fn api.Function, name string, args ...uint64) (uint64, error) {
	if v.failed.Load() {
		return 0, v.failErr
	}
	if v.closed {
		return 0, ErrClosed
	}
	savedEffective := v.effective
	v.effective = 0
	copy(v.stack[:], args)
	v.enter(name)
	err := fn.CallWithStack(v.ctx, v.stack[:])
	v.leave()
	v.effective = savedEffective
	if err != nil {
		return 0, v.fail(name, err)
	}
	return v.stack[0], nil
}

// fail marks the VM failed (cpp-host FailState::RuntimeError) and drops deferred actions.
func (v *vm) fail(fn string, err error) error {
	var te *TrapError
	if errors.As(err, &te) {
		te = &TrapError{Func: fn + " → " + te.Func, Reason: te.Reason, Err: te.Err}
	} else {
		te = &TrapError{Func: fn, Reason: "runtime error", Err: err}
	}
	if !v.failed.Load() {
		v.failErr = te
		v.failed.Store(true)
		v.hostLog(LogCritical, "Function: "+fn+" failed: "+firstLine(err.Error()))
		v.host.noteFailure(v, te)
	}
	v.after = nil
	v.stopNext = false
	return v.failErr
}

// runAfter runs the actions deferred by host calls during the last callback. Actions may call
// into the guest again (for example a continued request delivering its buffered body); their
// own deferred actions run in turn.
func (v *vm) runAfter() {
	for len(v.after) > 0 && !v.failed.Load() {
		a := v.after[0]
		v.after = v.after[1:]
		a()
	}
	v.after = nil
}

// activeStream returns the stream of the effective (or current) context, nil for the root
// context (cpp-host contextOrEffectiveContext).
func (v *vm) activeStream() *Stream {
	id := v.current
	if v.effective != 0 {
		if v.effective == v.rootID {
			return nil
		}
		if s, ok := v.streams[v.effective]; ok {
			return s
		}
	}
	return v.streams[id]
}

// activeID returns the id of the effective (or current) context.
func (v *vm) activeID() uint32 {
	if v.effective != 0 {
		if _, ok := v.streams[v.effective]; ok || v.effective == v.rootID {
			return v.effective
		}
	}
	return v.current
}

// Guest memory access. Slices returned by read are views that stay valid only until the
// guest runs again (its memory can grow, for example inside the allocator).

func (v *vm) read(ptr, n uint32) ([]byte, bool) {
	return v.mem.Read(ptr, n)
}

func (v *vm) readCopy(ptr, n uint32) ([]byte, bool) {
	b, ok := v.mem.Read(ptr, n)
	if !ok {
		return nil, false
	}
	return append([]byte(nil), b...), true
}

func (v *vm) readString(ptr, n uint32) (string, bool) {
	b, ok := v.mem.Read(ptr, n)
	if !ok {
		return "", false
	}
	return string(b), true
}

// readName is readString for a header or property name: the VM's copy of it (vm.name).
func (v *vm) readName(ptr, n uint32) (string, bool) {
	b, ok := v.mem.Read(ptr, n)
	if !ok {
		return "", false
	}
	return v.name(b), true
}

// maxNames and maxNameLen bound the names a VM keeps for reuse (vm.names).
const maxNames, maxNameLen = 256, 64

// name returns b as a string, the VM's copy of it if it has one: a filter reads, sets and
// removes the same few headers and properties on every stream, so their names are made once
// per VM, not per stream. Only names are kept, never values, and only the first maxNames
// distinct ones of at most maxNameLen bytes.
func (v *vm) name(b []byte) string {
	if name, ok := v.names[string(b)]; ok {
		return name
	}
	name := string(b)
	if len(v.names) < maxNames && len(name) <= maxNameLen {
		if v.names == nil {
			v.names = make(map[string]string, 16)
		}
		v.names[name] = name
	}
	return name
}

func (v *vm) write(ptr uint32, b []byte) bool { return v.mem.Write(ptr, b) }

func (v *vm) writeU32(ptr, val uint32) bool { return v.mem.WriteUint32Le(ptr, val) }

func (v *vm) writeU64(ptr uint32, val uint64) bool { return v.mem.WriteUint64Le(ptr, val) }

// allocate calls the guest allocator under cpp-host's allocator allowlist and returns the
// address of size writable bytes, or 0. A trap inside the allocator propagates to the running
// callback as a trap.
func (v *vm) allocate(size uint32) uint32 {
	saved := v.restricted
	v.restricted = v.host.mod.table.allocAllow[v.host.opts.Compat]
	v.alloc[0] = uint64(size)
	v.enter("proxy_on_memory_allocate")
	err := v.exp.malloc.CallWithStack(v.ctx, v.alloc[:])
	v.leave()
	v.restricted = saved
	if err != nil {
		var te *TrapError
		if errors.As(err, &te) {
			panic(&TrapError{Func: "proxy_on_memory_allocate → " + te.Func, Reason: te.Reason, Err: te.Err})
		}
		panic(&TrapError{Func: "proxy_on_memory_allocate", Reason: "runtime error", Err: err})
	}
	ptr := uint32(v.alloc[0])
	if ptr == 0 {
		return 0
	}
	if _, ok := v.mem.Read(ptr, size); !ok {
		return 0
	}
	return ptr
}

// copyOut is cpp-host's copyToPointerSize: allocate in the guest, copy data in, and write the
// address and length to the out-parameters. Empty data writes a null pointer and no call.
func (v *vm) copyOut(data []byte, ptrPtr, sizePtr uint32) Status {
	var ptr uint32
	if len(data) > 0 {
		ptr = v.allocate(uint32(len(data)))
		if ptr == 0 {
			return StatusInvalidMemoryAccess
		}
		if !v.write(ptr, data) {
			return StatusInvalidMemoryAccess
		}
	}
	if !v.writeU32(ptrPtr, ptr) || !v.writeU32(sizePtr, uint32(len(data))) {
		return StatusInvalidMemoryAccess
	}
	return StatusOK
}

// copyOutPairs is copyOut of MarshalPairs(h), serialized straight into the guest's
// allocation. An empty map writes a null pointer, as copyOut does for empty data. h cannot
// change while the guest allocates: no host call that changes a map is linked in the
// allocator (allocAllowed).
func (v *vm) copyOutPairs(h Headers, ptrPtr, sizePtr uint32) Status {
	if len(h) == 0 {
		return v.copyOut(nil, ptrPtr, sizePtr)
	}
	size := pairsSize(h)
	ptr := v.allocate(uint32(size))
	if ptr == 0 {
		return StatusInvalidMemoryAccess
	}
	dst, ok := v.mem.Read(ptr, uint32(size)) // a view of the memory as it is after allocating
	if !ok {
		return StatusInvalidMemoryAccess
	}
	marshalPairs(dst, h)
	if !v.writeU32(ptrPtr, ptr) || !v.writeU32(sizePtr, uint32(size)) {
		return StatusInvalidMemoryAccess
	}
	return StatusOK
}

// guestLog records a message the guest logged (proxy_log, fd_write), if the configured level
// lets it through, as Envoy's logger would.
func (v *vm) guestLog(level LogLevel, msg string) {
	if level < v.host.opts.LogLevel {
		return
	}
	v.host.logs.add(LogEntry{Time: v.host.now(), Level: level, Message: msg, Worker: v.worker, Context: v.activeID()}, v.host)
}

// hostLog records a diagnostic of the host itself (Envoy's own log lines about the VM).
func (v *vm) hostLog(level LogLevel, msg string) {
	v.host.logs.add(LogEntry{Time: v.host.now(), Level: level, Message: msg, Worker: v.worker, Context: v.current, Host: true}, v.host)
}

// closeLocked releases the instance. mu must be held.
func (v *vm) closeLocked() {
	v.closed = true
	if v.tickStop != nil {
		close(v.tickStop)
		v.tickStop = nil
	}
	for id, cancel := range v.calls {
		cancel()
		delete(v.calls, id)
	}
	if v.mod != nil {
		_ = v.mod.Close(context.Background())
	}
}
