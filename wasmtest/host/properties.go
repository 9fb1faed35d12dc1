package host

import (
	"encoding/binary"
	"net"
	"strconv"
	"strings"
)

// Envoy's top-level property names (PROPERTY_TOKENS in Envoy's wasm context.cc). A path whose
// first segment is not one of them is looked up in the values set with proxy_set_property.
var propertyTokens = map[string]bool{
	"metadata": true, "request": true, "response": true, "connection": true, "upstream": true,
	"node": true, "source": true, "destination": true, "listener_direction": true,
	"listener_metadata": true, "cluster_name": true, "cluster_metadata": true,
	"route_name": true, "route_metadata": true, "plugin_name": true,
	"upstream_host_metadata": true, "plugin_root_id": true, "plugin_vm_id": true,
	"connection_id": true, "filter_state": true, "xds": true,
}

// property resolves a NUL-separated property path for the active context, encoding values as
// Envoy does: strings raw, integers 8-byte little-endian, booleans one byte, timestamps int64
// nanoseconds, maps in the header-map pair format.
func (v *vm) property(path []byte) ([]byte, Status) {
	if len(path) == 0 {
		return nil, StatusNotFound
	}
	segs := strings.Split(string(path), "\x00")
	dotted := strings.Join(segs, ".")
	st := v.activeStream()
	if st != nil {
		if val, ok := st.info.Properties[dotted]; ok {
			return val, StatusOK
		}
	}
	if val, ok := v.host.opts.Properties[dotted]; ok {
		return val, StatusOK
	}
	if !propertyTokens[segs[0]] {
		if st != nil && len(segs) == 1 {
			if val, ok := st.props[segs[0]]; ok {
				return val, StatusOK
			}
		}
		return nil, StatusNotFound
	}
	if val, ok := v.pluginProperty(segs); ok {
		return val, StatusOK
	}
	if st == nil {
		return nil, StatusNotFound
	}
	val, ok := st.property(segs)
	if !ok {
		return nil, StatusNotFound
	}
	return val, StatusOK
}

func (v *vm) pluginProperty(segs []string) ([]byte, bool) {
	if len(segs) != 1 {
		return nil, false
	}
	o := &v.host.opts
	switch segs[0] {
	case "plugin_name":
		return []byte(o.PluginName), true
	case "plugin_root_id":
		return []byte(o.RootID), true
	case "plugin_vm_id":
		return []byte(o.VMID), true
	}
	return nil, false
}

func (s *Stream) property(segs []string) ([]byte, bool) {
	leaf := func(val []byte) ([]byte, bool) {
		if len(segs) != 2 {
			return nil, false
		}
		return val, true
	}
	switch segs[0] {
	case "cluster_name":
		if len(segs) != 1 || s.info.ClusterName == "" {
			return nil, false
		}
		return []byte(s.info.ClusterName), true
	case "route_name":
		if len(segs) != 1 {
			return nil, false
		}
		return []byte(s.info.RouteName), true
	case "connection_id":
		if len(segs) != 1 {
			return nil, false
		}
		return u64(uint64(s.id)), true
	case "request":
		return s.requestProperty(segs)
	case "response":
		return s.responseProperty(segs)
	case "source", "destination":
		if len(segs) != 2 {
			return nil, false
		}
		addr := s.info.SourceAddress
		if segs[0] == "destination" {
			addr = s.info.DestinationAddress
		}
		switch segs[1] {
		case "address":
			return []byte(addr), true
		case "port":
			_, p, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, false
			}
			n, err := strconv.ParseInt(p, 10, 64)
			if err != nil {
				return nil, false
			}
			return u64(uint64(n)), true
		}
	case "connection":
		if len(segs) != 2 {
			return nil, false
		}
		switch segs[1] {
		case "mtls":
			return boolean(s.info.MTLS), true
		case "id":
			return u64(uint64(s.id)), true
		case "requested_server_name":
			return leaf([]byte(s.info.RequestedServerName))
		}
	}
	return nil, false
}

// requestProperty serves request.*. The header-derived attributes exist only while Envoy
// still holds the request headers for the filter (during and while paused in the request
// callbacks, and in proxy_on_log), exactly as Envoy's RequestWrapper.
func (s *Stream) requestProperty(segs []string) ([]byte, bool) {
	if len(segs) < 2 {
		return nil, false
	}
	switch segs[1] {
	case "time":
		if len(segs) != 2 {
			return nil, false
		}
		return u64(uint64(s.start.UnixNano())), true
	case "protocol":
		if len(segs) != 2 {
			return nil, false
		}
		return []byte(s.info.Protocol), true
	}
	if !(s.req.mapAvail || s.logPhase) {
		return nil, false
	}
	h := s.req.hdrs
	if segs[1] == "headers" {
		switch len(segs) {
		case 2:
			return MarshalPairs(h), true
		case 3:
			val, ok := h.Get(segs[2])
			return []byte(val), ok
		}
		return nil, false
	}
	if len(segs) != 2 {
		return nil, false
	}
	path := h.Value(":path")
	var val string
	var ok bool
	switch segs[1] {
	case "path":
		val, ok = h.Get(":path")
	case "url_path":
		val, ok = path, h.Has(":path")
		if i := strings.IndexByte(val, '?'); i >= 0 {
			val = val[:i]
		}
	case "query":
		if i := strings.IndexByte(path, '?'); i >= 0 {
			val, ok = path[i+1:], true
		} else {
			val, ok = "", h.Has(":path")
		}
	case "host":
		val, ok = h.Get(":authority")
	case "scheme":
		val, ok = h.Get(":scheme")
	case "method":
		val, ok = h.Get(":method")
	case "referer":
		val, ok = h.Get("referer")
	case "useragent":
		val, ok = h.Get("user-agent")
	case "id":
		val, ok = h.Get("x-request-id")
	}
	return []byte(val), ok
}

func (s *Stream) responseProperty(segs []string) ([]byte, bool) {
	if len(segs) < 2 {
		return nil, false
	}
	r := &s.resp
	switch segs[1] {
	case "code":
		if len(segs) != 2 {
			return nil, false
		}
		if s.reply != nil {
			return u64(uint64(s.reply.Status)), true
		}
		if !r.hdrsIn {
			return nil, false
		}
		n, err := parseStatus(r.hdrs.Value(":status"))
		if err != nil {
			return nil, false
		}
		return u64(uint64(n)), true
	case "code_details":
		if len(segs) != 2 || !s.replied {
			return nil, false
		}
		return []byte(s.replyBase.Details), true
	case "headers", "trailers":
		if !(r.mapAvail || s.logPhase) {
			return nil, false
		}
		h := r.hdrs
		if segs[1] == "trailers" {
			h = r.trl
		}
		switch len(segs) {
		case 2:
			return MarshalPairs(h), true
		case 3:
			val, ok := h.Get(segs[2])
			return []byte(val), ok
		}
	}
	return nil, false
}

func u64(n uint64) []byte {
	b := make([]byte, 8)
	binary.LittleEndian.PutUint64(b, n)
	return b
}

func boolean(b bool) []byte {
	if b {
		return []byte{1}
	}
	return []byte{0}
}
