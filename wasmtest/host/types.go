package host

import (
	"errors"
	"strconv"
	"strings"
)

// Status is a proxy-wasm result code (proxy_status_t) as returned by the host calls.
type Status uint32

// Status values used by ABI 0.2.1 hosts (cpp-host's WasmResult).
const (
	StatusOK                   Status = 0
	StatusNotFound             Status = 1
	StatusBadArgument          Status = 2
	StatusSerializationFailure Status = 3
	StatusParseFailure         Status = 4
	StatusInvalidMemoryAccess  Status = 6
	StatusEmpty                Status = 7
	StatusCASMismatch          Status = 8
	StatusInternalFailure      Status = 10
	StatusBrokenConnection     Status = 11
	StatusUnimplemented        Status = 12
)

var statusNames = map[Status]string{
	StatusOK:                   "OK",
	StatusNotFound:             "NOT_FOUND",
	StatusBadArgument:          "BAD_ARGUMENT",
	StatusSerializationFailure: "SERIALIZATION_FAILURE",
	StatusParseFailure:         "PARSE_FAILURE",
	StatusInvalidMemoryAccess:  "INVALID_MEMORY_ACCESS",
	StatusEmpty:                "EMPTY",
	StatusCASMismatch:          "CAS_MISMATCH",
	StatusInternalFailure:      "INTERNAL_FAILURE",
	StatusBrokenConnection:     "BROKEN_CONNECTION",
	StatusUnimplemented:        "UNIMPLEMENTED",
}

// String returns the ABI name of s.
func (s Status) String() string {
	if n, ok := statusNames[s]; ok {
		return n
	}
	return "STATUS_" + strconv.FormatUint(uint64(s), 10)
}

// LogLevel is a proxy-wasm log level, numbered as in the ABI.
type LogLevel uint32

// Log levels of the ABI.
const (
	LogTrace LogLevel = iota
	LogDebug
	LogInfo
	LogWarn
	LogError
	LogCritical
)

// String returns the lower-case name of the level, as Envoy prints it.
func (l LogLevel) String() string {
	switch l {
	case LogTrace:
		return "trace"
	case LogDebug:
		return "debug"
	case LogInfo:
		return "info"
	case LogWarn:
		return "warn"
	case LogError:
		return "error"
	case LogCritical:
		return "critical"
	}
	return "level" + strconv.FormatUint(uint64(l), 10)
}

// ABI enums used by the host calls.
const (
	bufferRequestBody      = 0
	bufferResponseBody     = 1
	bufferDownstreamData   = 2
	bufferUpstreamData     = 3
	bufferCallResponseBody = 4
	bufferGRPCMessage      = 5
	bufferVMConfiguration  = 6
	bufferPluginConfig     = 7
	bufferForeignArgs      = 8
	bufferTypeMax          = 8

	mapRequestHeaders       = 0
	mapRequestTrailers      = 1
	mapResponseHeaders      = 2
	mapResponseTrailers     = 3
	mapGRPCInitialMetadata  = 4
	mapGRPCTrailingMetadata = 5
	mapCallResponseHeaders  = 6
	mapCallResponseTrailers = 7
	mapTypeMax              = 7

	streamRequest    = 0
	streamResponse   = 1
	streamDownstream = 2
	streamUpstream   = 3

	metricCounter   = 0
	metricGauge     = 1
	metricHistogram = 2
	metricTypeMask  = 0x3
	metricIDStep    = 0x4

	actionContinue = 0
	actionPause    = 1
	// actionStopped stands for a callback that sent a local reply: cpp-host then stops
	// iteration whatever the callback returned (stopNextIteration).
	actionStopped = 1 << 32
)

// WASI errno values returned by the wasi_snapshot_preview1 stubs.
const (
	errnoSuccess  = 0
	errnoBadf     = 8
	errnoFault    = 21
	errnoInval    = 28
	errnoNoent    = 44
	errnoNosys    = 52
	errnoNotdir   = 20
	errnoNotsup   = 58
	maxRandomSize = 64 * 1024 // PROXY_WASM_HOST_WASI_RANDOM_GET_MAX_SIZE_BYTES
)

// Limits of cpp-host (include/proxy-wasm/limits.h).
const (
	maxPairsBytes    = 1024 * 1024
	maxPairsCount    = 1024
	maxMemoryPages   = 16384 // 1 GiB, PROXY_WASM_HOST_MAX_WASM_MEMORY_SIZE_BYTES
	grpcStatusAbsent = 0xffffffff
)

// Header is one header field. Names are lower case; pseudo-headers (":method", ":path",
// ":authority", ":scheme", ":status") appear as in Envoy.
type Header struct {
	Name, Value string
}

// Headers is an ordered header map that may hold a name several times, like Envoy's.
type Headers []Header

// Get returns the first value of name (case-insensitive) and whether it is present.
func (h Headers) Get(name string) (string, bool) {
	for _, f := range h {
		if len(f.Name) == len(name) && (f.Name == name || strings.EqualFold(f.Name, name)) {
			return f.Value, true
		}
	}
	return "", false
}

// Value returns the first value of name, or "".
func (h Headers) Value(name string) string {
	v, _ := h.Get(name)
	return v
}

// Values returns every value of name in order.
func (h Headers) Values(name string) []string {
	var vs []string
	for _, f := range h {
		if strings.EqualFold(f.Name, name) {
			vs = append(vs, f.Value)
		}
	}
	return vs
}

// Has reports whether name is present.
func (h Headers) Has(name string) bool {
	_, ok := h.Get(name)
	return ok
}

// Clone returns a copy of h.
func (h Headers) Clone() Headers {
	if h == nil {
		return nil
	}
	return append(Headers(nil), h...)
}

// add appends a field with a lower-cased name (Envoy's LowerCaseString).
func (h *Headers) add(name, value string) {
	*h = append(*h, Header{Name: strings.ToLower(name), Value: value})
}

// remove deletes every field named name.
func (h *Headers) remove(name string) {
	name = strings.ToLower(name)
	out := (*h)[:0]
	for _, f := range *h {
		if f.Name != name {
			out = append(out, f)
		}
	}
	*h = out
}

// replace sets name to a single value: the first field keeps its place, later ones go.
func (h *Headers) replace(name, value string) {
	name = strings.ToLower(name)
	found := false
	out := (*h)[:0]
	for _, f := range *h {
		if f.Name == name {
			if found {
				continue
			}
			found = true
			f.Value = value
		}
		out = append(out, f)
	}
	*h = out
	if !found {
		h.add(name, value)
	}
}

// byteSize is Envoy's HeaderMap::byteSize, which proxy_get_header_map_size returns.
func (h Headers) byteSize() uint32 {
	var n uint32
	for _, f := range h {
		n += uint32(len(f.Name) + len(f.Value))
	}
	return n
}

// Errors callers branch on.
var (
	// ErrVMFailed is returned when a VM has failed (a trap, proc_exit, a restricted host call)
	// and the operation could not be completed.
	ErrVMFailed = errors.New("proxy-wasm VM failed")
	// ErrStartFailed is returned by New when proxy_on_vm_start or proxy_on_configure
	// returned false.
	ErrStartFailed = errors.New("proxy-wasm plugin failed to start")
	// ErrStreamEnded is returned when input is sent to a stream that has already been
	// answered, reset or closed.
	ErrStreamEnded = errors.New("stream already ended")
	// ErrStreamReset is returned when the stream was reset (proxy_close_stream, or a local
	// reply after the response headers had gone downstream).
	ErrStreamReset = errors.New("stream reset")
	// ErrPaused is returned (wrapped with the context's error) when a context ended while the
	// filter kept the stream paused.
	ErrPaused = errors.New("stream still paused by the filter")
	// ErrClosed is returned after Host.Close.
	ErrClosed = errors.New("host closed")
	// ErrBadModule is returned by Compile for a module the host cannot run (no ABI marker,
	// an import the host does not provide, no allocator).
	ErrBadModule = errors.New("unusable proxy-wasm module")
)

// TrapError describes a VM failure: the function that was running and the cause.
type TrapError struct {
	// Func is the export (or host call) that was running when the VM failed.
	Func string
	// Reason is a short cause: "restricted_callback", "proc_exit", or the runtime error.
	Reason string
	// Err is the underlying runtime error, if any.
	Err error
}

// Error implements error.
func (e *TrapError) Error() string {
	msg := "proxy-wasm VM failed in " + e.Func + ": " + e.Reason
	if e.Err != nil && !strings.Contains(e.Reason, e.Err.Error()) {
		msg += ": " + firstLine(e.Err.Error())
	}
	return msg
}

// Unwrap lets errors.Is(err, ErrVMFailed) match.
func (e *TrapError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrVMFailed, e.Err}
	}
	return []error{ErrVMFailed}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
