//go:build wasip1

//lint:file-ignore U1000 the functions are exported to the host with //go:wasmexport

// Package guest is the proxy-wasm glue the floor modules (wasmtest/floor) share: the ABI
// version marker, the allocator the host calls, and the few host calls the modules make. It
// is written apart from the filter's ABI layer (filter/internal/abi), smaller: one VM, one
// host call at a time, no plugin interface.
package guest

import "unsafe"

// Actions returned by the HTTP callbacks.
const (
	Continue uint32 = 0
	Pause    uint32 = 1
)

// Header map and buffer types of ABI 0.2.1.
const (
	RequestHeaders  uint32 = 0
	ResponseHeaders uint32 = 2
	requestBody     uint32 = 0
)

const maxAllocation = 64 << 20

// The host writes a call's out-parameters here. They must be in memory that does not move
// while the host re-enters the guest to allocate (never the goroutine stack); package-level
// variables are. One set serves every call: a VM runs one host call at a time.
var (
	outPtr *byte
	outLen uint32
	// pins keeps the buffers handed to the host alive until the host call that asked for
	// them has returned: a collection during a second allocation in the same call could
	// otherwise free the first before the guest has read its pointer.
	pins [][]byte
)

//go:wasmexport proxy_abi_version_0_2_1
func proxyABIVersion021() {}

//go:wasmexport proxy_on_memory_allocate
func proxyOnMemoryAllocate(size uint32) *byte {
	if size > maxAllocation {
		return nil
	}
	b := make([]byte, max(size, 1))
	pins = append(pins, b)
	return &b[0]
}

//go:wasmimport env proxy_get_header_map_pairs
func proxyGetHeaderMapPairs(m uint32, retPtr unsafe.Pointer, retLen *uint32) uint32

//go:wasmimport env proxy_get_buffer_bytes
func proxyGetBufferBytes(t uint32, start, maxSize uint32, retPtr unsafe.Pointer, retLen *uint32) uint32

//go:wasmimport env proxy_set_property
func proxySetProperty(path string, value *byte, valueLen uint32) uint32

//go:wasmimport env proxy_send_local_response
func proxySendLocalResponse(status uint32, details string, body *byte, bodyLen uint32, headers *byte, headersLen uint32, grpcStatus int32) uint32

// received returns the buffer the last call wrote to the out-parameters, if it is one the
// guest allocated in that call, and unpins every buffer of the call.
func received(status uint32) []byte {
	p, n := outPtr, outLen
	outPtr, outLen = nil, 0
	var b []byte
	if status == 0 && n > 0 {
		for _, buf := range pins {
			if &buf[0] == p && uint64(len(buf)) >= uint64(n) {
				b = buf[:n:n]
				break
			}
		}
	}
	clear(pins)
	pins = pins[:0]
	return b
}

// HeaderPairs returns header map m serialised (floor.HeaderValue reads it), or nil.
func HeaderPairs(m uint32) []byte {
	return received(proxyGetHeaderMapPairs(m, unsafe.Pointer(&outPtr), &outLen))
}

// RequestBody returns the first size bytes of the buffered request body, or nil.
func RequestBody(size int32) []byte {
	return received(proxyGetBufferBytes(requestBody, 0, uint32(size), unsafe.Pointer(&outPtr), &outLen))
}

// SetProperty publishes value under path for the current stream.
func SetProperty(path, value string) {
	proxySetProperty(path, unsafe.StringData(value), uint32(len(value)))
}

// Reply answers the request locally with status and no body.
func Reply(status uint32) {
	proxySendLocalResponse(status, "", nil, 0, nil, 0, -1)
}
