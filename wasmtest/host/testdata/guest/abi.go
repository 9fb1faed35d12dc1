//go:build wasip1

package main

import "unsafe"

// A minimal proxy-wasm ABI for the host's test guest. It is not the filter's ABI layer; it
// exists to drive the host through every path its tests need.

//go:wasmimport env proxy_log
func proxyLog(level uint32, msg string) uint32

//go:wasmimport env proxy_get_log_level
func proxyGetLogLevel(ret unsafe.Pointer) uint32

//go:wasmimport env proxy_set_tick_period_milliseconds
func proxySetTickPeriod(ms uint32) uint32

//go:wasmimport env proxy_set_effective_context
func proxySetEffectiveContext(id uint32) uint32

//go:wasmimport env proxy_get_buffer_bytes
func proxyGetBufferBytes(t, start, max uint32, ptr, size unsafe.Pointer) uint32

//go:wasmimport env proxy_get_buffer_status
func proxyGetBufferStatus(t uint32, size, flags unsafe.Pointer) uint32

//go:wasmimport env proxy_set_buffer_bytes
func proxySetBufferBytes(t, start, size uint32, data *byte, n uint32) uint32

//go:wasmimport env proxy_get_header_map_value
func proxyGetHeaderMapValue(m uint32, key string, ptr, size unsafe.Pointer) uint32

//go:wasmimport env proxy_replace_header_map_value
func proxyReplaceHeaderMapValue(m uint32, key, value string) uint32

//go:wasmimport env proxy_add_header_map_value
func proxyAddHeaderMapValue(m uint32, key, value string) uint32

//go:wasmimport env proxy_remove_header_map_value
func proxyRemoveHeaderMapValue(m uint32, key string) uint32

//go:wasmimport env proxy_get_header_map_pairs
func proxyGetHeaderMapPairs(m uint32, ptr, size unsafe.Pointer) uint32

//go:wasmimport env proxy_set_header_map_pairs
func proxySetHeaderMapPairs(m uint32, data *byte, n uint32) uint32

//go:wasmimport env proxy_get_header_map_size
func proxyGetHeaderMapSize(m uint32, size unsafe.Pointer) uint32

//go:wasmimport env proxy_continue_stream
func proxyContinueStream(t uint32) uint32

//go:wasmimport env proxy_close_stream
func proxyCloseStream(t uint32) uint32

//go:wasmimport env proxy_get_status
func proxyGetStatus(code, ptr, size unsafe.Pointer) uint32

//go:wasmimport env proxy_send_local_response
func proxySendLocalResponse(status uint32, details string, body *byte, bodyLen uint32, hdrs *byte, hdrsLen uint32, grpc int32) uint32

//go:wasmimport env proxy_http_call
func proxyHTTPCall(cluster string, hdrs *byte, hdrsLen uint32, body *byte, bodyLen uint32, trl *byte, trlLen uint32, timeout uint32, id unsafe.Pointer) uint32

//go:wasmimport env proxy_get_shared_data
func proxyGetSharedData(key string, ptr, size, cas unsafe.Pointer) uint32

//go:wasmimport env proxy_set_shared_data
func proxySetSharedData(key string, value *byte, n uint32, cas uint32) uint32

//go:wasmimport env proxy_define_metric
func proxyDefineMetric(t uint32, name string, id unsafe.Pointer) uint32

//go:wasmimport env proxy_increment_metric
func proxyIncrementMetric(id uint32, delta int64) uint32

//go:wasmimport env proxy_record_metric
func proxyRecordMetric(id uint32, value uint64) uint32

//go:wasmimport env proxy_get_metric
func proxyGetMetric(id uint32, value unsafe.Pointer) uint32

//go:wasmimport env proxy_get_property
func proxyGetProperty(path *byte, n uint32, ptr, size unsafe.Pointer) uint32

//go:wasmimport env proxy_set_property
func proxySetProperty(path *byte, n uint32, value *byte, vn uint32) uint32

// pinned keeps the buffers the host asked for alive until the next callback.
var pinned [][]byte

//go:wasmexport proxy_on_memory_allocate
func onMemoryAllocate(size uint32) *byte {
	if size == 0 {
		size = 1
	}
	b := make([]byte, size)
	pinned = append(pinned, b)
	return &b[0]
}

func enter() { pinned = pinned[:0] }

func logf(level uint32, msg string) { proxyLog(level, msg) }

func bytesOf(p *byte, n int32) []byte {
	if p == nil || n == 0 {
		return nil
	}
	return append([]byte(nil), unsafe.Slice(p, n)...)
}

func ptr(b []byte) *byte {
	if len(b) == 0 {
		return nil
	}
	return &b[0]
}

func header(m uint32, key string) (string, uint32) {
	var p *byte
	var n int32
	st := proxyGetHeaderMapValue(m, key, unsafe.Pointer(&p), unsafe.Pointer(&n))
	return string(bytesOf(p, n)), st
}

func buffer(t, start, max uint32) ([]byte, uint32) {
	var p *byte
	var n int32
	st := proxyGetBufferBytes(t, start, max, unsafe.Pointer(&p), unsafe.Pointer(&n))
	return bytesOf(p, n), st
}

func pairs(m uint32) ([][2]string, uint32) {
	var p *byte
	var n int32
	st := proxyGetHeaderMapPairs(m, unsafe.Pointer(&p), unsafe.Pointer(&n))
	return decodePairs(bytesOf(p, n)), st
}

func property(path ...string) ([]byte, uint32) {
	var raw []byte
	for i, s := range path {
		if i > 0 {
			raw = append(raw, 0)
		}
		raw = append(raw, s...)
	}
	var p *byte
	var n int32
	st := proxyGetProperty(ptr(raw), uint32(len(raw)), unsafe.Pointer(&p), unsafe.Pointer(&n))
	return bytesOf(p, n), st
}

func le32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

func put32(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
}

func decodePairs(b []byte) [][2]string {
	if len(b) < 4 {
		return nil
	}
	n := int(le32(b))
	p := 4 + n*8
	out := make([][2]string, 0, n)
	for i := 0; i < n; i++ {
		kl, vl := int(le32(b[4+i*8:])), int(le32(b[8+i*8:]))
		k := string(b[p : p+kl])
		p += kl + 1
		v := string(b[p : p+vl])
		p += vl + 1
		out = append(out, [2]string{k, v})
	}
	return out
}

func encodePairs(ps [][2]string) []byte {
	size := 4
	for _, kv := range ps {
		size += 8 + len(kv[0]) + len(kv[1]) + 2
	}
	b := make([]byte, size)
	put32(b, uint32(len(ps)))
	p := 4
	for _, kv := range ps {
		put32(b[p:], uint32(len(kv[0])))
		put32(b[p+4:], uint32(len(kv[1])))
		p += 8
	}
	for _, kv := range ps {
		p += copy(b[p:], kv[0]) + 1
		p += copy(b[p:], kv[1]) + 1
	}
	return b
}

func itoa(n int64) string {
	if n == 0 {
		return "0"
	}
	neg := n < 0
	if neg {
		n = -n
	}
	var b [24]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}
