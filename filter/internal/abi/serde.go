package abi

import (
	"encoding/binary"
	"errors"
	"strings"
	"unsafe"

	"github.com/mcpmesh/gateway/filter/plugin"
)

// ErrMalformedHeaderMap is returned by ParseHeaderMap for bytes that are not a serialized map.
var ErrMalformedHeaderMap = errors.New("malformed proxy-wasm header map")

// malformedError is the error ParseHeaderMap returns; it matches ErrMalformedHeaderMap.
type malformedError struct{ reason string }

func malformed(reason string) error { return &malformedError{reason: reason} }

func (e *malformedError) Error() string { return ErrMalformedHeaderMap.Error() + ": " + e.reason }

func (e *malformedError) Is(target error) bool { return target == ErrMalformedHeaderMap }

// AppendHeaderMap appends the proxy-wasm serialization of hs to dst and returns the result:
// a little-endian u32 pair count N, N (key length, value length) u32 pairs, then every key and
// value followed by a NUL byte (lengths exclude the NUL).
func AppendHeaderMap(dst []byte, hs []plugin.Header) []byte {
	size := 4 + 8*len(hs)
	for _, h := range hs {
		size += len(h.Name) + len(h.Value) + 2
	}
	if cap(dst)-len(dst) < size {
		grown := make([]byte, len(dst), len(dst)+size)
		copy(grown, dst)
		dst = grown
	}
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(hs)))
	for _, h := range hs {
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(h.Name)))
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(h.Value)))
	}
	for _, h := range hs {
		dst = append(dst, h.Name...)
		dst = append(dst, 0)
		dst = append(dst, h.Value...)
		dst = append(dst, 0)
	}
	return dst
}

// ParseHeaderMap decodes a serialized header map (see AppendHeaderMap). An empty input, a
// single NUL byte and a zero count all mean an empty map. Anything else that is not exactly
// one well-formed map, with every NUL terminator in place and no trailing bytes, is rejected
// with ErrMalformedHeaderMap. It never panics, whatever b holds.
func ParseHeaderMap(b []byte) ([]plugin.Header, error) { return parseHeaderMap(nil, b, false) }

// parseOwnedHeaderMap is ParseHeaderMap for a buffer the guest owns and never writes again,
// one the host filled through proxy_on_memory_allocate: the header strings share its memory
// instead of a copy of it (in the wasm build an allocation costs more than the parsing). The
// headers are stored in dst's array when it has room for them.
func parseOwnedHeaderMap(dst []plugin.Header, b []byte) ([]plugin.Header, error) {
	return parseHeaderMap(dst, b, true)
}

func parseHeaderMap(dst []plugin.Header, b []byte, owned bool) ([]plugin.Header, error) {
	if len(b) == 0 || (len(b) == 1 && b[0] == 0) {
		return nil, nil
	}
	if len(b) < 4 {
		return nil, malformed("shorter than its pair count")
	}
	n := uint64(binary.LittleEndian.Uint32(b))
	total := uint64(len(b))
	sizesEnd := 4 + 8*n
	if sizesEnd > total {
		return nil, malformed("pair count exceeds the data")
	}
	if n == 0 {
		if total != 4 {
			return nil, malformed("trailing bytes after an empty map")
		}
		return nil, nil
	}
	// Each pair takes at least ten bytes (two lengths, two NULs): a count the data cannot
	// hold is refused before anything is allocated.
	if n > (total-4)/10 {
		return nil, malformed("pair count exceeds the data")
	}
	// One pass checks each pair against the data and slices it: in the wasm filter a second
	// loop over the pairs costs more than the headers' allocation.
	var data string
	if owned {
		data = unsafe.String(&b[sizesEnd], len(b)-int(sizesEnd)) // n > 0: not empty
	} else {
		data = string(b[sizesEnd:])
	}
	var hs []plugin.Header
	if uint64(cap(dst)) >= n {
		hs = dst[:n]
	} else {
		hs = make([]plugin.Header, n)
	}
	// The loop consumes the lengths and the data as it goes, so that the compiler can prove
	// most indexes in bounds: in the wasm build every bounds check is a branch through the
	// function's dispatch loop (a 9-header map: 3,956 -> 3,188 instructions under wazero).
	sizes, rest := b[4:sizesEnd], data
	for i := range hs {
		if len(sizes) < 8 {
			break // never: sizes holds 8 bytes for each of the n headers
		}
		kl := uint64(binary.LittleEndian.Uint32(sizes))
		vl := uint64(binary.LittleEndian.Uint32(sizes[4:8]))
		sizes = sizes[8:]
		end := kl + vl + 2 // below 2^34: no overflow
		if end > uint64(len(rest)) {
			return nil, malformed("pair lengths exceed the data")
		}
		kv := rest[:end]
		rest = rest[end:]
		if kv[kl] != 0 || kv[len(kv)-1] != 0 {
			return nil, malformed("missing NUL terminator")
		}
		hs[i] = plugin.Header{Name: kv[:kl], Value: kv[kl+1 : len(kv)-1]}
	}
	if len(rest) != 0 {
		return nil, malformed("trailing bytes after the last pair")
	}
	return hs, nil
}

// PropertyPath serializes a property path for proxy_get_property: the segments joined by NUL
// bytes, with no trailing NUL ("request", "path" → "request\x00path").
func PropertyPath(segments ...string) []byte {
	return []byte(strings.Join(segments, "\x00"))
}
