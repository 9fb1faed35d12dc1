package host

import (
	"encoding/binary"
	"errors"
)

// errBadPairs is returned by UnmarshalPairs for malformed input.
var errBadPairs = errors.New("malformed header-map pairs")

// MarshalPairs serializes h in the proxy-wasm header-map format: a little-endian u32 pair
// count N, N (name length, value length) u32 pairs, then each name and value followed by a
// NUL byte (the lengths exclude it).
func MarshalPairs(h Headers) []byte {
	b := make([]byte, pairsSize(h))
	marshalPairs(b, h)
	return b
}

// pairsSize is the length of MarshalPairs(h).
func pairsSize(h Headers) int {
	size := 4
	for _, f := range h {
		size += 8 + len(f.Name) + 1 + len(f.Value) + 1
	}
	return size
}

// marshalPairs serializes h into b, of pairsSize(h) bytes (NULs included, whatever b held).
func marshalPairs(b []byte, h Headers) {
	binary.LittleEndian.PutUint32(b, uint32(len(h)))
	p := 4
	for _, f := range h {
		binary.LittleEndian.PutUint32(b[p:], uint32(len(f.Name)))
		binary.LittleEndian.PutUint32(b[p+4:], uint32(len(f.Value)))
		p += 8
	}
	for _, f := range h {
		p += copy(b[p:], f.Name)
		b[p] = 0
		p += copy(b[p+1:], f.Value) + 1
		b[p] = 0
		p++
	}
}

// UnmarshalPairs parses the proxy-wasm header-map format with cpp-host's checks
// (PairsUtil::toPairs): at most 1 MiB and 1024 pairs, NUL terminators present, no trailing
// bytes. An empty input is an empty map.
func UnmarshalPairs(b []byte) (Headers, error) {
	if len(b) == 0 {
		return nil, nil
	}
	if len(b) > maxPairsBytes || len(b) < 4 {
		return nil, errBadPairs
	}
	n := binary.LittleEndian.Uint32(b)
	if n > maxPairsCount || uint64(len(b)-4) < uint64(n)*8 {
		return nil, errBadPairs
	}
	sizes := b[4 : 4+int(n)*8]
	p := 4 + int(n)*8
	h := make(Headers, 0, n)
	for i := 0; i < int(n); i++ {
		kl := int(binary.LittleEndian.Uint32(sizes[i*8:]))
		vl := int(binary.LittleEndian.Uint32(sizes[i*8+4:]))
		if kl > len(b)-p-1 || b[p+kl] != 0 {
			return nil, errBadPairs
		}
		k := string(b[p : p+kl])
		p += kl + 1
		if vl > len(b)-p-1 || b[p+vl] != 0 {
			return nil, errBadPairs
		}
		v := string(b[p : p+vl])
		p += vl + 1
		h = append(h, Header{Name: k, Value: v})
	}
	if p != len(b) {
		return nil, errBadPairs
	}
	return h, nil
}

// toPairs is cpp-host's PairsUtil::toPairs: malformed input silently becomes an empty map.
// A lone NUL byte (what some SDKs send for "no headers") is therefore empty too.
func toPairs(b []byte) Headers {
	h, err := UnmarshalPairs(b)
	if err != nil {
		return nil
	}
	return h
}
