package abi

import (
	"encoding/binary"
	"unsafe"

	"github.com/mcpmesh/gateway/filter/plugin"
)

// The header-map parser as it was before its loop consumed the lengths and the data as it went
// (parseHeaderMap), kept as the reference FuzzParseHeaderMap_MatchesReference compares it with.

func refParseHeaderMap(dst []plugin.Header, b []byte, owned bool) ([]plugin.Header, error) {
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
	pos, size := uint64(0), uint64(len(data))
	for i := range hs {
		off := 4 + 8*i
		kl := uint64(binary.LittleEndian.Uint32(b[off:]))
		vl := uint64(binary.LittleEndian.Uint32(b[off+4:]))
		end := pos + kl + vl + 2
		if end > size {
			return nil, malformed("pair lengths exceed the data")
		}
		if data[pos+kl] != 0 || data[end-1] != 0 {
			return nil, malformed("missing NUL terminator")
		}
		hs[i] = plugin.Header{Name: data[pos : pos+kl], Value: data[pos+kl+1 : end-1]}
		pos = end
	}
	if pos != size {
		return nil, malformed("trailing bytes after the last pair")
	}
	return hs, nil
}
