package host

import (
	"strings"
	"time"
)

// proxy_* host calls, following cpp-host src/exports.cc and Envoy's Context. Each writes its
// proxy_status_t result to s[0].

func ret(s []uint64, st Status) { s[0] = uint64(st) }

func hLog(v *vm, s []uint64) {
	level := uint32(s[0])
	if level > uint32(LogCritical) {
		ret(s, StatusBadArgument)
		return
	}
	msg, ok := v.readString(uint32(s[1]), uint32(s[2]))
	if !ok {
		ret(s, StatusInvalidMemoryAccess)
		return
	}
	v.guestLog(LogLevel(level), msg)
	ret(s, StatusOK)
}

func hGetLogLevel(v *vm, s []uint64) {
	if !v.writeU32(uint32(s[0]), uint32(v.host.opts.LogLevel)) {
		ret(s, StatusInvalidMemoryAccess)
		return
	}
	ret(s, StatusOK)
}

func hGetCurrentTime(v *vm, s []uint64) {
	if !v.writeU64(uint32(s[0]), v.host.realtimeNanos()) {
		ret(s, StatusInvalidMemoryAccess)
		return
	}
	ret(s, StatusOK)
}

func hSetTickPeriod(v *vm, s []uint64) {
	v.setTickPeriod(time.Duration(uint32(s[0])) * time.Millisecond)
	ret(s, StatusOK)
}

// hDone is proxy_done: only meaningful for a root context whose proxy_on_done returned false
// during shutdown; this host never defers shutdown, so it is NOT_FOUND as in cpp-host.
func hDone(v *vm, s []uint64) { ret(s, StatusNotFound) }

func hSetEffectiveContext(v *vm, s []uint64) {
	id := uint32(s[0])
	if _, ok := v.streams[id]; !ok && id != v.rootID {
		ret(s, StatusBadArgument)
		return
	}
	v.effective = id
	ret(s, StatusOK)
}

// hGetStatus returns the root context's status: BROKEN_CONNECTION "reset" while a failed
// call's response is delivered, otherwise 0 and "".
func hGetStatus(v *vm, s []uint64) {
	if !v.writeU32(uint32(s[0]), v.statusCode) {
		ret(s, StatusInvalidMemoryAccess)
		return
	}
	ret(s, v.copyOut([]byte(v.statusMsg), uint32(s[1]), uint32(s[2])))
}

// Buffers.

// buffer returns the buffer of type t for the active context and, if it can be written, where
// it is kept; nil with found=false is NOT_FOUND.
func (v *vm) buffer(t uint32) (data []byte, dst *[]byte, found bool) {
	st := v.activeStream()
	switch t {
	case bufferRequestBody, bufferResponseBody:
		if st == nil {
			return nil, nil, true // Envoy returns an empty buffer on the root context
		}
		f := &st.req
		if t == bufferResponseBody {
			f = &st.resp
		}
		if !f.bodyAvail {
			return nil, nil, true
		}
		return f.body, &f.body, true
	case bufferCallResponseBody:
		if v.callResp == nil {
			return nil, nil, false
		}
		return v.callResp.body, nil, true
	case bufferVMConfiguration:
		return v.host.opts.VMConfig, nil, true
	case bufferPluginConfig:
		if !v.configuring {
			return nil, nil, false
		}
		return v.host.opts.PluginConfig, nil, true
	}
	return nil, nil, false
}

func hGetBufferBytes(v *vm, s []uint64) {
	t, start, length := uint32(s[0]), uint32(s[1]), uint32(s[2])
	if t > bufferTypeMax {
		ret(s, StatusBadArgument)
		return
	}
	data, _, found := v.buffer(t)
	if !found {
		ret(s, StatusNotFound)
		return
	}
	if start > start+length { // overflow
		ret(s, StatusBadArgument)
		return
	}
	size := uint32(len(data))
	if start > size {
		length = 0
	} else if start+length > size {
		length = size - start
	}
	if length == 0 {
		if !v.writeU32(uint32(s[3]), 0) || !v.writeU32(uint32(s[4]), 0) {
			ret(s, StatusInvalidMemoryAccess)
			return
		}
		ret(s, StatusOK)
		return
	}
	// Straight from the buffer: no host call that changes a buffer is linked in the allocator
	// (allocAllowed), so data stays as it is while the guest allocates.
	ret(s, v.copyOut(data[start:start+length], uint32(s[3]), uint32(s[4])))
}

func hGetBufferStatus(v *vm, s []uint64) {
	t := uint32(s[0])
	if t > bufferTypeMax {
		ret(s, StatusBadArgument)
		return
	}
	data, _, found := v.buffer(t)
	if !found {
		ret(s, StatusNotFound)
		return
	}
	if !v.writeU32(uint32(s[1]), uint32(len(data))) || !v.writeU32(uint32(s[2]), 0) {
		ret(s, StatusInvalidMemoryAccess)
		return
	}
	ret(s, StatusOK)
}

// hSetBufferBytes follows Envoy's Buffer::copyFrom: start 0 replaces the first size bytes
// (size 0 prepends), start at or past the end appends, anything else is BAD_ARGUMENT.
func hSetBufferBytes(v *vm, s []uint64) {
	t, start, size := uint32(s[0]), uint32(s[1]), uint32(s[2])
	if t > bufferTypeMax {
		ret(s, StatusBadArgument)
		return
	}
	data, dst, found := v.buffer(t)
	if !found {
		ret(s, StatusNotFound)
		return
	}
	in, ok := v.readCopy(uint32(s[3]), uint32(s[4]))
	if !ok {
		ret(s, StatusInvalidMemoryAccess)
		return
	}
	if dst == nil {
		ret(s, StatusBadArgument) // immutable buffer, or no body buffer at this point
		return
	}
	switch {
	case start == 0:
		drop := int(size)
		if drop > len(data) {
			drop = len(data)
		}
		*dst = append(in, data[drop:]...)
	case int(start) >= len(data):
		*dst = append(data[:len(data):len(data)], in...)
	default:
		ret(s, StatusBadArgument)
		return
	}
	ret(s, StatusOK)
}

// Header maps.

// headerMap returns the map of type t for the active context: mutable is Envoy's getMap,
// readable its getConstMap (which adds the access-log phase and the call response maps).
func (v *vm) headerMap(t uint32, mutable bool) *Headers {
	switch t {
	case mapCallResponseHeaders, mapCallResponseTrailers:
		if mutable || v.callResp == nil {
			return nil
		}
		if t == mapCallResponseHeaders {
			return &v.callResp.headers
		}
		return &v.callResp.trailers
	}
	st := v.activeStream()
	if st == nil {
		return nil
	}
	if st.logPhase {
		if mutable {
			return nil
		}
		switch t {
		case mapRequestHeaders:
			return &st.req.hdrs
		case mapResponseHeaders:
			if st.resp.hdrsIn {
				return &st.resp.hdrs
			}
			return nil
		case mapResponseTrailers:
			if st.resp.trlIn {
				return &st.resp.trl
			}
			return nil
		}
		return nil
	}
	switch t {
	case mapRequestHeaders:
		if st.req.mapAvail {
			return &st.req.hdrs
		}
	case mapRequestTrailers:
		if st.req.trlAvail {
			return &st.req.trl
		}
	case mapResponseHeaders:
		if st.resp.mapAvail {
			return &st.resp.hdrs
		}
	case mapResponseTrailers:
		if st.resp.trlAvail {
			return &st.resp.trl
		}
	}
	return nil
}

func hGetHeaderMapValue(v *vm, s []uint64) {
	t := uint32(s[0])
	if t > mapTypeMax {
		ret(s, StatusBadArgument)
		return
	}
	key, ok := v.readName(uint32(s[1]), uint32(s[2]))
	if !ok {
		ret(s, StatusInvalidMemoryAccess)
		return
	}
	m := v.headerMap(t, false)
	if m == nil {
		if st := v.activeStream(); st != nil && st.logPhase {
			ret(s, StatusNotFound)
			return
		}
		ret(s, StatusBadArgument)
		return
	}
	val, found := m.Get(strings.ToLower(key))
	if !found {
		ret(s, StatusNotFound)
		return
	}
	ret(s, v.copyOut([]byte(val), uint32(s[3]), uint32(s[4])))
}

func (v *vm) mutateMap(s []uint64, withValue bool, op func(m *Headers, key, value string)) {
	t := uint32(s[0])
	if t > mapTypeMax {
		ret(s, StatusBadArgument)
		return
	}
	key, ok := v.readName(uint32(s[1]), uint32(s[2]))
	if !ok {
		ret(s, StatusInvalidMemoryAccess)
		return
	}
	var val string
	if withValue {
		if val, ok = v.readString(uint32(s[3]), uint32(s[4])); !ok {
			ret(s, StatusInvalidMemoryAccess)
			return
		}
	}
	m := v.headerMap(t, true)
	if m == nil {
		ret(s, StatusBadArgument)
		return
	}
	op(m, key, val)
	ret(s, StatusOK)
}

func hAddHeaderMapValue(v *vm, s []uint64) {
	v.mutateMap(s, true, func(m *Headers, k, val string) { m.add(k, val) })
}

func hReplaceHeaderMapValue(v *vm, s []uint64) {
	v.mutateMap(s, true, func(m *Headers, k, val string) { m.replace(k, val) })
}

func hRemoveHeaderMapValue(v *vm, s []uint64) {
	v.mutateMap(s, false, func(m *Headers, k, _ string) { m.remove(k) })
}

// hGetHeaderMapPairs returns the serialized map; an unavailable map is an empty one (OK).
func hGetHeaderMapPairs(v *vm, s []uint64) {
	t := uint32(s[0])
	if t > mapTypeMax {
		ret(s, StatusBadArgument)
		return
	}
	var h Headers
	if m := v.headerMap(t, false); m != nil {
		h = *m
	}
	ret(s, v.copyOutPairs(h, uint32(s[1]), uint32(s[2])))
}

func hSetHeaderMapPairs(v *vm, s []uint64) {
	t := uint32(s[0])
	if t > mapTypeMax {
		ret(s, StatusBadArgument)
		return
	}
	raw, ok := v.read(uint32(s[1]), uint32(s[2]))
	if !ok {
		ret(s, StatusInvalidMemoryAccess)
		return
	}
	pairs := toPairs(raw)
	m := v.headerMap(t, true)
	if m == nil {
		ret(s, StatusBadArgument)
		return
	}
	*m = (*m)[:0]
	for _, p := range pairs {
		m.add(p.Name, p.Value)
	}
	ret(s, StatusOK)
}

// hGetHeaderMapSize returns Envoy's HeaderMap::byteSize (the sum of name and value lengths),
// not the number of fields.
func hGetHeaderMapSize(v *vm, s []uint64) {
	t := uint32(s[0])
	if t > mapTypeMax {
		ret(s, StatusBadArgument)
		return
	}
	m := v.headerMap(t, true)
	if m == nil {
		ret(s, StatusBadArgument)
		return
	}
	if !v.writeU32(uint32(s[1]), m.byteSize()) {
		ret(s, StatusInvalidMemoryAccess)
		return
	}
	ret(s, StatusOK)
}

// Streams.

func hContinueStream(v *vm, s []uint64) {
	t := uint32(s[0])
	switch t {
	case streamRequest, streamResponse:
	case streamDownstream:
		ret(s, StatusOK)
		return
	case streamUpstream:
		ret(s, StatusUnimplemented)
		return
	default:
		ret(s, StatusBadArgument)
		return
	}
	st := v.activeStream()
	if st == nil {
		v.hostLog(LogDebug, "proxy_continue_stream on the root context has no effect (call proxy_set_effective_context first)")
		ret(s, StatusOK)
		return
	}
	// Envoy forgets the request maps at once, whichever direction is continued.
	st.req.mapAvail, st.req.trlAvail = false, false
	if t == streamRequest {
		v.after = append(v.after, st.continueRequest)
	} else {
		v.after = append(v.after, st.continueResponse)
	}
	ret(s, StatusOK)
}

func hCloseStream(v *vm, s []uint64) {
	t := uint32(s[0])
	switch t {
	case streamRequest, streamResponse:
		if st := v.activeStream(); st != nil {
			v.after = append(v.after, func() { st.resetStream("wasm_close_stream") })
		}
		ret(s, StatusOK)
	case streamDownstream, streamUpstream:
		ret(s, StatusOK)
	default:
		ret(s, StatusBadArgument)
	}
}

func hSendLocalResponse(v *vm, s []uint64) {
	details, ok1 := v.readString(uint32(s[1]), uint32(s[2]))
	body, ok2 := v.readCopy(uint32(s[3]), uint32(s[4]))
	raw, ok3 := v.read(uint32(s[5]), uint32(s[6]))
	if !ok1 || !ok2 || !ok3 {
		ret(s, StatusInvalidMemoryAccess)
		return
	}
	extra := toPairs(raw)
	st := v.activeStream()
	v.stopNext = true
	if st != nil {
		r := LocalReply{
			Status:     int(uint32(s[0])),
			Body:       body,
			Details:    underscoreSpaces(details),
			GRPCStatus: int32(uint32(s[7])),
		}
		for _, p := range extra {
			r.Headers.add(p.Name, p.Value)
		}
		v.after = append(v.after, func() { st.sendLocalReply(r, false) })
	} else {
		v.hostLog(LogDebug, "proxy_send_local_response on the root context has no effect (call proxy_set_effective_context first)")
	}
	ret(s, StatusOK)
}

// underscoreSpaces is Envoy's StringUtil::replaceAllEmptySpace for response code details.
func underscoreSpaces(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case ' ', '\t', '\n', '\r', '\f', '\v':
			return '_'
		}
		return r
	}, s)
}
