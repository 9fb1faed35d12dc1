package abi_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/mcpmesh/gateway/filter/internal/abi"
	"github.com/mcpmesh/gateway/filter/plugin"
)

// This file is a deliberately small proxy-wasm host on wazero, enough to run modules built
// with package abi in tests (the product's emulator lives in wasmtest/host). It keeps header
// maps per context, serves an http call response only while the root context is effective, and
// can re-enter proxy_on_memory_allocate several times per host call (stress mode) to catch
// allocations that are not kept alive.

// buildWasm builds pkg (a package path or ./dir) for wasip1 as a reactor module at out.
func buildWasm(out, pkg string, tags ...string) error {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return errors.New("go command not found: cannot build " + pkg)
	}
	args := []string{"build", "-buildmode=c-shared", "-trimpath"}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	args = append(args, "-o", out, pkg)
	cmd := exec.Command(goBin, args...)
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if b, err := cmd.CombinedOutput(); err != nil {
		return errors.New("go " + strings.Join(args, " ") + ": " + err.Error() + "\n" + string(b))
	}
	return nil
}

var guest struct {
	once sync.Once
	bin  []byte
	err  error
}

// guestModule builds testdata/guest once per test binary, with allocation GC stress on.
func guestModule(t *testing.T) []byte {
	t.Helper()
	guest.once.Do(func() {
		dir, err := os.MkdirTemp("", "abi-guest-")
		if err != nil {
			guest.err = err
			return
		}
		defer os.RemoveAll(dir)
		out := filepath.Join(dir, "guest.wasm")
		if guest.err = buildWasm(out, "./testdata/guest", "abi_gcstress"); guest.err == nil {
			guest.bin, guest.err = os.ReadFile(out)
		}
	})
	if guest.err != nil {
		t.Fatal(guest.err)
	}
	return guest.bin
}

type logLine struct {
	level uint32
	msg   string
}

type localResponse struct {
	status  uint32
	body    string
	headers []plugin.Header
}

type httpCall struct {
	context uint32
	cluster string
	headers []plugin.Header
	body    string
	timeout uint32
	id      uint32
}

type continued struct {
	context uint32
	stream  uint32
}

// testHost is the host state of one module instance.
type testHost struct {
	t      *testing.T
	ctx    context.Context
	mod    api.Module
	stress bool

	current       uint32 // the effective context
	rootID        uint32
	effectiveSets []uint32

	logs     []logLine
	maps     map[uint32]map[abi.MapType][]plugin.Header
	buffers  map[uint32]map[abi.BufferType][]byte
	config   []byte
	callResp *struct {
		headers []plugin.Header
		body    []byte
	}
	props     map[string][]byte
	local     map[uint32]localResponse
	calls     []httpCall
	continued []continued
	closed    []continued
	metrics   map[string]uint32
	counters  map[uint32]int64
	unknown   map[string]int
}

// newTestHost compiles bin, instantiates WASI and an env module that provides every env
// function bin imports (those without a handler answer UNIMPLEMENTED), then runs _initialize.
func newTestHost(t *testing.T, bin []byte, stress bool) *testHost {
	t.Helper()
	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	t.Cleanup(func() { r.Close(ctx) })
	wasi_snapshot_preview1.MustInstantiate(ctx, r)
	compiled, err := r.CompileModule(ctx, bin)
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	h := &testHost{
		t: t, ctx: ctx, stress: stress,
		maps:     map[uint32]map[abi.MapType][]plugin.Header{},
		buffers:  map[uint32]map[abi.BufferType][]byte{},
		props:    map[string][]byte{},
		local:    map[uint32]localResponse{},
		metrics:  map[string]uint32{},
		counters: map[uint32]int64{},
		unknown:  map[string]int{},
	}
	env := r.NewHostModuleBuilder("env")
	for _, def := range compiled.ImportedFunctions() {
		module, name, _ := def.Import()
		if module != "env" {
			continue
		}
		fn := handlers[name]
		if fn == nil {
			name := name
			fn = func(h *testHost, m api.Module, s []uint64) uint32 {
				h.unknown[name]++
				return uint32(abi.StatusUnimplemented)
			}
		}
		env.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(_ context.Context, m api.Module, s []uint64) {
			s[0] = uint64(fn(h, m, s))
		}), def.ParamTypes(), def.ResultTypes()).Export(name)
	}
	if _, err := env.Instantiate(ctx); err != nil {
		t.Fatalf("instantiate env: %v", err)
	}
	mod, err := r.InstantiateModule(ctx, compiled, wazero.NewModuleConfig().WithStartFunctions().WithName("guest"))
	if err != nil {
		t.Fatalf("instantiate module: %v", err)
	}
	h.mod = mod
	h.call("_initialize")
	return h
}

// call runs an export and returns its first result (0 when it has none).
func (h *testHost) call(name string, args ...uint64) uint64 {
	h.t.Helper()
	f := h.mod.ExportedFunction(name)
	if f == nil {
		h.t.Fatalf("module does not export %s", name)
	}
	res, err := f.Call(h.ctx, args...)
	if err != nil {
		h.t.Fatalf("%s%v: %v", name, args, err)
	}
	if len(res) == 0 {
		return 0
	}
	return res[0]
}

// onStream calls a stream export with the stream as the effective context.
func (h *testHost) onStream(name string, id uint32, args ...uint64) uint64 {
	h.t.Helper()
	h.current = id
	return h.call(name, append([]uint64{uint64(id)}, args...)...)
}

func (h *testHost) hasLog(level plugin.LogLevel, substr string) bool {
	for _, l := range h.logs {
		if l.level == uint32(level) && strings.Contains(l.msg, substr) {
			return true
		}
	}
	return false
}

func (h *testHost) header(id uint32, m abi.MapType, name string) (string, bool) {
	for _, hd := range h.maps[id][m] {
		if hd.Name == name {
			return hd.Value, true
		}
	}
	return "", false
}

func (h *testHost) setHeaders(id uint32, m abi.MapType, hs ...plugin.Header) {
	if h.maps[id] == nil {
		h.maps[id] = map[abi.MapType][]plugin.Header{}
	}
	h.maps[id][m] = hs
}

func (h *testHost) setBuffer(id uint32, t abi.BufferType, b []byte) {
	if h.buffers[id] == nil {
		h.buffers[id] = map[abi.BufferType][]byte{}
	}
	h.buffers[id][t] = b
}

func (h *testHost) read(m api.Module, ptr, n uint64) []byte {
	if n == 0 {
		return nil
	}
	b, ok := m.Memory().Read(uint32(ptr), uint32(n))
	if !ok {
		h.t.Fatalf("guest passed out-of-range memory %d+%d", ptr, n)
	}
	return bytes.Clone(b)
}

func (h *testHost) writeU32(m api.Module, ptr uint64, v uint32) {
	if !m.Memory().WriteUint32Le(uint32(ptr), v) {
		h.t.Fatalf("guest passed out-of-range out-parameter %d", ptr)
	}
}

// copyOut hands data to the guest the way cpp-host does: proxy_on_memory_allocate, copy, write
// pointer and length to the out-parameters. In stress mode it then allocates more buffers of
// the same size and fills them with 0xAA, so a buffer the guest forgot to keep alive would be
// reused and corrupted before the guest reads it.
func (h *testHost) copyOut(m api.Module, data []byte, retPtr, retLen uint64) uint32 {
	if len(data) == 0 {
		h.writeU32(m, retPtr, 0)
		h.writeU32(m, retLen, 0)
		return uint32(abi.StatusOK)
	}
	alloc := func() uint32 {
		res, err := m.ExportedFunction("proxy_on_memory_allocate").Call(h.ctx, uint64(len(data)))
		if err != nil || res[0] == 0 {
			h.t.Fatalf("proxy_on_memory_allocate(%d) = %v, %v", len(data), res, err)
		}
		return uint32(res[0])
	}
	p := alloc()
	m.Memory().Write(p, data)
	if h.stress {
		for range 3 {
			q := alloc()
			m.Memory().Write(q, bytes.Repeat([]byte{0xAA}, len(data)))
		}
	}
	h.writeU32(m, retPtr, p)
	h.writeU32(m, retLen, uint32(len(data)))
	return uint32(abi.StatusOK)
}

func (h *testHost) headerMap(t abi.MapType) ([]plugin.Header, bool) {
	if t == abi.MapHTTPCallResponseHeaders {
		if h.callResp == nil || h.current != h.rootID {
			return nil, false
		}
		return h.callResp.headers, true
	}
	return h.maps[h.current][t], true
}

func (h *testHost) buffer(t abi.BufferType) ([]byte, bool) {
	switch t {
	case abi.BufferPluginConfiguration:
		return h.config, true
	case abi.BufferHTTPCallResponseBody:
		if h.callResp == nil || h.current != h.rootID {
			return nil, false
		}
		return h.callResp.body, true
	}
	b, ok := h.buffers[h.current][t]
	return b, ok
}

func removeHeader(hs []plugin.Header, name string) []plugin.Header {
	kept := hs[:0:0]
	for _, hd := range hs {
		if hd.Name != name {
			kept = append(kept, hd)
		}
	}
	return kept
}

const (
	ok          = uint32(abi.StatusOK)
	notFound    = uint32(abi.StatusNotFound)
	badArgument = uint32(abi.StatusBadArgument)
)

// handlers implement the env imports; s holds the parameters and receives the result.
var handlers = map[string]func(h *testHost, m api.Module, s []uint64) uint32{
	"proxy_log": func(h *testHost, m api.Module, s []uint64) uint32 {
		h.logs = append(h.logs, logLine{uint32(s[0]), string(h.read(m, s[1], s[2]))})
		return ok
	},
	"proxy_get_log_level": func(h *testHost, m api.Module, s []uint64) uint32 {
		h.writeU32(m, s[0], uint32(plugin.LogDebug))
		return ok
	},
	"proxy_set_effective_context": func(h *testHost, m api.Module, s []uint64) uint32 {
		id := uint32(s[0])
		if _, known := h.maps[id]; !known && id != h.rootID {
			return badArgument
		}
		h.current = id
		h.effectiveSets = append(h.effectiveSets, id)
		return ok
	},
	"proxy_get_buffer_bytes": func(h *testHost, m api.Module, s []uint64) uint32 {
		b, found := h.buffer(abi.BufferType(s[0]))
		if !found {
			return notFound
		}
		start, max := uint32(s[1]), uint32(s[2])
		if start > uint32(len(b)) {
			return badArgument
		}
		b = b[start:]
		if uint32(len(b)) > max {
			b = b[:max]
		}
		return h.copyOut(m, b, s[3], s[4])
	},
	"proxy_set_buffer_bytes": func(h *testHost, m api.Module, s []uint64) uint32 {
		t, start, size := abi.BufferType(s[0]), uint32(s[1]), uint32(s[2])
		b, found := h.buffers[h.current][t]
		if !found {
			return notFound
		}
		if start != 0 || size > uint32(len(b)) {
			return badArgument
		}
		h.buffers[h.current][t] = append(append([]byte(nil), h.read(m, s[3], s[4])...), b[size:]...)
		return ok
	},
	"proxy_get_header_map_pairs": func(h *testHost, m api.Module, s []uint64) uint32 {
		hs, found := h.headerMap(abi.MapType(s[0]))
		if !found {
			return notFound
		}
		return h.copyOut(m, abi.AppendHeaderMap(nil, hs), s[1], s[2])
	},
	"proxy_get_header_map_value": func(h *testHost, m api.Module, s []uint64) uint32 {
		hs, _ := h.headerMap(abi.MapType(s[0]))
		key := string(h.read(m, s[1], s[2]))
		for _, hd := range hs {
			if hd.Name == key {
				return h.copyOut(m, []byte(hd.Value), s[3], s[4])
			}
		}
		return notFound
	},
	"proxy_replace_header_map_value": func(h *testHost, m api.Module, s []uint64) uint32 {
		t, key, value := abi.MapType(s[0]), string(h.read(m, s[1], s[2])), string(h.read(m, s[3], s[4]))
		h.setHeaders(h.current, t, append(removeHeader(h.maps[h.current][t], key), plugin.Header{Name: key, Value: value})...)
		return ok
	},
	"proxy_add_header_map_value": func(h *testHost, m api.Module, s []uint64) uint32 {
		t, key, value := abi.MapType(s[0]), string(h.read(m, s[1], s[2])), string(h.read(m, s[3], s[4]))
		h.setHeaders(h.current, t, append(h.maps[h.current][t], plugin.Header{Name: key, Value: value})...)
		return ok
	},
	"proxy_remove_header_map_value": func(h *testHost, m api.Module, s []uint64) uint32 {
		t, key := abi.MapType(s[0]), string(h.read(m, s[1], s[2]))
		h.setHeaders(h.current, t, removeHeader(h.maps[h.current][t], key)...)
		return ok
	},
	"proxy_get_property": func(h *testHost, m api.Module, s []uint64) uint32 {
		v, found := h.props[string(h.read(m, s[0], s[1]))]
		if !found {
			return notFound
		}
		return h.copyOut(m, v, s[2], s[3])
	},
	"proxy_set_property": func(h *testHost, m api.Module, s []uint64) uint32 {
		h.props[string(h.read(m, s[0], s[1]))] = append([]byte(nil), h.read(m, s[2], s[3])...)
		return ok
	},
	"proxy_send_local_response": func(h *testHost, m api.Module, s []uint64) uint32 {
		hs, err := abi.ParseHeaderMap(h.read(m, s[5], s[6]))
		if err != nil || int32(uint32(s[7])) != -1 {
			return badArgument
		}
		h.local[h.current] = localResponse{status: uint32(s[0]), body: string(h.read(m, s[3], s[4])), headers: hs}
		return ok
	},
	"proxy_http_call": func(h *testHost, m api.Module, s []uint64) uint32 {
		hs, err := abi.ParseHeaderMap(h.read(m, s[2], s[3]))
		if err != nil {
			return badArgument
		}
		c := httpCall{context: h.current, cluster: string(h.read(m, s[0], s[1])), headers: hs,
			body: string(h.read(m, s[4], s[5])), timeout: uint32(s[8]), id: uint32(len(h.calls) + 1)}
		h.calls = append(h.calls, c)
		h.writeU32(m, s[9], c.id)
		return ok
	},
	"proxy_continue_stream": func(h *testHost, m api.Module, s []uint64) uint32 {
		h.continued = append(h.continued, continued{h.current, uint32(s[0])})
		return ok
	},
	"proxy_close_stream": func(h *testHost, m api.Module, s []uint64) uint32 {
		h.closed = append(h.closed, continued{h.current, uint32(s[0])})
		return ok
	},
	"proxy_define_metric": func(h *testHost, m api.Module, s []uint64) uint32 {
		name := string(h.read(m, s[1], s[2]))
		id, found := h.metrics[name]
		if !found {
			id = uint32(len(h.metrics) + 1)
			h.metrics[name] = id
		}
		h.writeU32(m, s[3], id)
		return ok
	},
	"proxy_increment_metric": func(h *testHost, m api.Module, s []uint64) uint32 {
		h.counters[uint32(s[0])] += int64(s[1])
		return ok
	},
}
