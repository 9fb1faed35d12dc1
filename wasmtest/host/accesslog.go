package host

import (
	"strconv"
	"strings"
)

// Filter state and access logs.
//
// Envoy keeps a value a wasm filter sets with proxy_set_property(path, value) as the filter
// state "wasm.<path>" of the stream (a CelState), readable back with proxy_get_property at
// the same path and printable by the access log with %FILTER_STATE(wasm.<path>:PLAIN)%.
// The host does the same: hSetProperty stores the value on the stream, property() reads it
// back, and AccessLog renders it.

// FilterStatePrefix is the prefix of the filter state keys of wasm properties.
const FilterStatePrefix = "wasm."

// FilterState returns the filter state key of the stream (for example
// "wasm.mcp_gateway.allow"), as set by the filter with proxy_set_property, also after the
// stream has ended (as an access log sees it).
func (s *Stream) FilterState(key string) ([]byte, bool) {
	s.vm.mu.Lock()
	defer s.vm.mu.Unlock()
	path, ok := strings.CutPrefix(key, FilterStatePrefix)
	if !ok {
		return nil, false
	}
	v, ok := s.props[path]
	return append([]byte(nil), v...), ok
}

// FilterStates returns a copy of every filter state entry of the stream, keyed
// "wasm.<path>".
func (s *Stream) FilterStates() map[string][]byte {
	s.vm.mu.Lock()
	defer s.vm.mu.Unlock()
	out := make(map[string][]byte, len(s.props))
	for k, v := range s.props {
		out[FilterStatePrefix+k] = append([]byte(nil), v...)
	}
	return out
}

// AccessLog renders an Envoy access log format string for the stream, as Envoy would once
// it ends. Supported operators:
//
//	%FILTER_STATE(KEY:PLAIN)%  the filter state KEY as plain text ("-" when unset)
//	%REQ(NAME)%                the first value of request header NAME (":path" and the other
//	                           pseudo-headers included; "-" when absent), NAME case-insensitive;
//	                           "%REQ(A?B)%" falls back from A to B
//	%RESPONSE_CODE%            the status of the local reply or of the upstream response ("0"
//	                           when there is none)
//	%%                         a percent sign
//
// Other text is copied. An unknown or malformed operator is copied as it is.
func (s *Stream) AccessLog(format string) string {
	s.vm.mu.Lock()
	defer s.vm.mu.Unlock()
	var b strings.Builder
	for {
		i := strings.IndexByte(format, '%')
		if i < 0 {
			b.WriteString(format)
			return b.String()
		}
		b.WriteString(format[:i])
		format = format[i:]
		if strings.HasPrefix(format, "%%") {
			b.WriteByte('%')
			format = format[2:]
			continue
		}
		j := strings.IndexByte(format[1:], '%')
		if j < 0 {
			b.WriteString(format)
			return b.String()
		}
		op := format[1 : j+1]
		format = format[j+2:]
		if v, ok := s.accessLogOperator(op); ok {
			b.WriteString(v)
		} else {
			b.WriteString("%" + op + "%")
		}
	}
}

// accessLogOperator evaluates one operator (without its percent signs); the vm lock is held.
func (s *Stream) accessLogOperator(op string) (string, bool) {
	if op == "RESPONSE_CODE" {
		if s.reply != nil {
			return strconv.Itoa(s.reply.Status), true
		}
		if st, ok := s.resp.hdrs.Get(":status"); ok {
			return st, true
		}
		return "0", true
	}
	name, arg, ok := strings.Cut(op, "(")
	if !ok || !strings.HasSuffix(arg, ")") {
		return "", false
	}
	arg = arg[:len(arg)-1]
	switch name {
	case "FILTER_STATE":
		key, format, _ := strings.Cut(arg, ":")
		path, isWasm := strings.CutPrefix(key, FilterStatePrefix)
		v, set := s.props[path]
		if format != "PLAIN" {
			return "", false
		}
		if !isWasm || !set {
			return "-", true
		}
		return string(v), true
	case "REQ":
		for _, h := range strings.Split(arg, "?") {
			if v, ok := s.req.hdrs.Get(strings.ToLower(h)); ok {
				return v, true
			}
		}
		return "-", true
	}
	return "", false
}
