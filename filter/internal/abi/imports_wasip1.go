//go:build wasip1

package abi

import "unsafe"

// Host imports of proxy-wasm ABI 0.2.1 (module "env"). A string parameter is lowered to the
// (pointer, length) pair the ABI expects. Out-parameters must point to heap memory, never to
// the goroutine stack: the host writes through them after re-entering
// proxy_on_memory_allocate, which may grow and move the stack. wasmHost passes fields of one
// heap block (outParams); a local variable would do too, as these functions have no body and
// their pointer arguments escape, but at the cost of an allocation per call. Do not mark
// these //go:noescape.

//go:wasmimport env proxy_log
func proxyLog(level uint32, msg string) Status

//go:wasmimport env proxy_get_log_level
func proxyGetLogLevel(ret *uint32) Status

//go:wasmimport env proxy_set_effective_context
func proxySetEffectiveContext(contextID uint32) Status

//go:wasmimport env proxy_get_buffer_bytes
func proxyGetBufferBytes(t uint32, start, maxSize uint32, retPtr unsafe.Pointer, retLen *uint32) Status

//go:wasmimport env proxy_set_buffer_bytes
func proxySetBufferBytes(t uint32, start, size uint32, data *byte, dataLen uint32) Status

//go:wasmimport env proxy_get_header_map_pairs
func proxyGetHeaderMapPairs(m uint32, retPtr unsafe.Pointer, retLen *uint32) Status

//go:wasmimport env proxy_get_header_map_value
func proxyGetHeaderMapValue(m uint32, key string, retPtr unsafe.Pointer, retLen *uint32) Status

//go:wasmimport env proxy_add_header_map_value
func proxyAddHeaderMapValue(m uint32, key, value string) Status

//go:wasmimport env proxy_replace_header_map_value
func proxyReplaceHeaderMapValue(m uint32, key, value string) Status

//go:wasmimport env proxy_remove_header_map_value
func proxyRemoveHeaderMapValue(m uint32, key string) Status

//go:wasmimport env proxy_continue_stream
func proxyContinueStream(s uint32) Status

//go:wasmimport env proxy_close_stream
func proxyCloseStream(s uint32) Status

//go:wasmimport env proxy_send_local_response
func proxySendLocalResponse(status uint32, details string, body *byte, bodyLen uint32, headers *byte, headersLen uint32, grpcStatus int32) Status

//go:wasmimport env proxy_http_call
func proxyHTTPCall(cluster string, headers *byte, headersLen uint32, body *byte, bodyLen uint32, trailers *byte, trailersLen uint32, timeoutMillis uint32, retCallID *uint32) Status

//go:wasmimport env proxy_define_metric
func proxyDefineMetric(t uint32, name string, retID *uint32) Status

//go:wasmimport env proxy_increment_metric
func proxyIncrementMetric(id uint32, delta int64) Status

//go:wasmimport env proxy_get_property
func proxyGetProperty(path *byte, pathLen uint32, retPtr unsafe.Pointer, retLen *uint32) Status

//go:wasmimport env proxy_set_property
func proxySetProperty(path string, value *byte, valueLen uint32) Status

//go:wasmimport env proxy_get_shared_data
func proxyGetSharedData(key string, retPtr unsafe.Pointer, retLen *uint32, retCAS *uint32) Status

//go:wasmimport env proxy_set_shared_data
func proxySetSharedData(key string, value *byte, valueLen uint32, cas uint32) Status

// wasmHost implements proxyHost with the imports above.
type wasmHost struct {
	pins *pinSet
	out  *outParams
}

// outParams holds the out-parameters of host calls. They must live on the heap, which never
// moves (see above); one block serves every call rather than allocating them per call, which
// costs more than many host calls in the wasm build. That is safe because a VM runs one host
// call at a time: the only guest code that can run during one is the allocator, which makes
// none that write out-parameters.
type outParams struct {
	ptr *byte
	a   uint32
	cas uint32
}

// buffer returns the (pointer, length) pair the last call wrote to ptr and a, and clears the
// pointer so that the block does not keep the buffer alive.
func (o *outParams) buffer() (*byte, uint32) {
	p, n := o.ptr, o.a
	o.ptr, o.a = nil, 0
	return p, n
}

// received turns a (pointer, length) pair the host wrote into a slice of the pinned buffer it
// points at, then unpins every buffer of the finished host call.
func (w wasmHost) received(st Status, p *byte, n uint32) ([]byte, Status) {
	b, ok := w.pins.slice(p, n)
	w.pins.release()
	if st != StatusOK {
		return nil, st
	}
	if !ok {
		return nil, StatusInvalidMemoryAccess
	}
	return b, StatusOK
}

func bytesArg(b []byte) (*byte, uint32) { return unsafe.SliceData(b), uint32(len(b)) }

func (wasmHost) log(level uint32, msg string) Status { return proxyLog(level, msg) }

func (w wasmHost) getLogLevel() (uint32, Status) {
	st := proxyGetLogLevel(&w.out.a)
	return w.out.a, st
}

func (wasmHost) setEffectiveContext(id uint32) Status { return proxySetEffectiveContext(id) }

func (w wasmHost) getBufferBytes(t BufferType, start, maxSize uint32) ([]byte, Status) {
	st := proxyGetBufferBytes(uint32(t), start, maxSize, unsafe.Pointer(&w.out.ptr), &w.out.a)
	p, n := w.out.buffer()
	return w.received(st, p, n)
}

func (wasmHost) setBufferBytes(t BufferType, start, size uint32, data []byte) Status {
	var p *byte
	if len(data) > 0 {
		p = &data[0]
	}
	return proxySetBufferBytes(uint32(t), start, size, p, uint32(len(data)))
}

func (w wasmHost) getHeaderMapPairs(m MapType) ([]byte, Status) {
	st := proxyGetHeaderMapPairs(uint32(m), unsafe.Pointer(&w.out.ptr), &w.out.a)
	p, n := w.out.buffer()
	return w.received(st, p, n)
}

func (w wasmHost) getHeaderMapValue(m MapType, key string) (string, Status) {
	st := proxyGetHeaderMapValue(uint32(m), key, unsafe.Pointer(&w.out.ptr), &w.out.a)
	p, n := w.out.buffer()
	b, st := w.received(st, p, n)
	if len(b) == 0 {
		return "", st
	}
	// The buffer belongs to this value alone and is never written again.
	return unsafe.String(&b[0], len(b)), st
}

func (wasmHost) addHeaderMapValue(m MapType, key, value string) Status {
	return proxyAddHeaderMapValue(uint32(m), key, value)
}

func (wasmHost) replaceHeaderMapValue(m MapType, key, value string) Status {
	return proxyReplaceHeaderMapValue(uint32(m), key, value)
}

func (wasmHost) removeHeaderMapValue(m MapType, key string) Status {
	return proxyRemoveHeaderMapValue(uint32(m), key)
}

func (wasmHost) continueStream(s StreamType) Status { return proxyContinueStream(uint32(s)) }

func (wasmHost) closeStream(s StreamType) Status { return proxyCloseStream(uint32(s)) }

func (wasmHost) sendLocalResponse(status uint32, details string, body, headers []byte, grpcStatus int32) Status {
	bp, bn := bytesArg(body)
	hp, hn := bytesArg(headers)
	return proxySendLocalResponse(status, details, bp, bn, hp, hn, grpcStatus)
}

func (w wasmHost) httpCall(cluster string, headers, body, trailers []byte, timeoutMillis uint32) (uint32, Status) {
	hp, hn := bytesArg(headers)
	bp, bn := bytesArg(body)
	tp, tn := bytesArg(trailers)
	st := proxyHTTPCall(cluster, hp, hn, bp, bn, tp, tn, timeoutMillis, &w.out.a)
	return w.out.a, st
}

func (w wasmHost) defineMetric(t MetricType, name string) (uint32, Status) {
	st := proxyDefineMetric(uint32(t), name, &w.out.a)
	return w.out.a, st
}

func (wasmHost) incrementMetric(id uint32, delta int64) Status {
	return proxyIncrementMetric(id, delta)
}

func (wasmHost) setProperty(path string, value []byte) Status {
	vp, vn := bytesArg(value)
	return proxySetProperty(path, vp, vn)
}

func (w wasmHost) getProperty(path []byte) ([]byte, Status) {
	pp, pn := bytesArg(path)
	st := proxyGetProperty(pp, pn, unsafe.Pointer(&w.out.ptr), &w.out.a)
	p, n := w.out.buffer()
	return w.received(st, p, n)
}

func (w wasmHost) getSharedData(key string) ([]byte, uint32, Status) {
	st := proxyGetSharedData(key, unsafe.Pointer(&w.out.ptr), &w.out.a, &w.out.cas)
	cas := w.out.cas
	p, n := w.out.buffer()
	b, st := w.received(st, p, n)
	return b, cas, st
}

func (wasmHost) setSharedData(key string, value []byte, cas uint32) Status {
	vp, vn := bytesArg(value)
	return proxySetSharedData(key, vp, vn, cas)
}
