package floor

import (
	"encoding/binary"
	"hash/maphash"
	"unsafe"

	"github.com/mcpmesh/gateway/filter/jsonrpc"
)

// Decision is a cached decision: whose credential it is and which tools they may call.
type Decision struct {
	User string
	// Tools is the allow set. It holds a few names, for which a scan costs less than hashing.
	Tools []string
}

// Allows reports whether tool is in the allow set.
func (d *Decision) Allows(tool string) bool {
	for _, t := range d.Tools {
		if t == tool {
			return true
		}
	}
	return false
}

// Cache maps a keyed hash of a bearer token to its decision, so the token itself is not kept.
type Cache struct {
	seed      maphash.Seed
	decisions map[uint64]*Decision
}

// NewCache returns an empty cache with a random hash seed.
func NewCache() *Cache {
	return &Cache{seed: maphash.MakeSeed(), decisions: make(map[uint64]*Decision, 16)}
}

// Get returns the decision cached for token, or nil.
func (c *Cache) Get(token string) *Decision { return c.decisions[maphash.String(c.seed, token)] }

// Put caches d for token.
func (c *Cache) Put(token string, d *Decision) { c.decisions[maphash.String(c.seed, token)] = d }

// BearerToken returns the token of an Authorization value "Bearer <token>" (the scheme
// compared case-insensitively, as RFC 9110 says), or false.
func BearerToken(v string) (string, bool) {
	const scheme = "bearer "
	if len(v) <= len(scheme) {
		return "", false
	}
	for i := 0; i < len(scheme); i++ {
		if v[i]|0x20 != scheme[i] {
			return "", false
		}
	}
	tok := v[len(scheme):]
	for i := 0; i < len(tok); i++ {
		if tok[i] <= ' ' || tok[i] >= 0x7f {
			return "", false
		}
	}
	return tok, true
}

// Call is what the floor reads of a request body.
type Call struct {
	// Method is the JSON-RPC method; Tool is params.name of a tools/call, else "".
	Method, Tool string
}

// ReadCall validates body as one JSON-RPC message and reads its method and params.name with
// the filter's own reader (jsonrpc.ParseOwned: the strings share body's memory, which nobody
// writes again). A batch or an invalid body is false.
func ReadCall(msg *[1]jsonrpc.Message, body []byte) (Call, bool) {
	b, err := jsonrpc.ParseOwned(msg[:], body)
	if err != nil || b.Array || len(b.Messages) != 1 {
		return Call{}, false
	}
	m := &b.Messages[0]
	return Call{Method: m.Method, Tool: m.Tool}, true
}

// HeaderValue returns the value of the first header called name (lower case, as the proxy
// hands them over) in a header map serialised as proxy-wasm does: a little-endian u32 count
// N, N pairs of u32 name and value lengths, then each name and value followed by a NUL. The
// value shares pairs' memory. A malformed map is treated as holding no such header.
func HeaderValue(pairs []byte, name string) (string, bool) {
	if len(pairs) < 4 {
		return "", false
	}
	n := uint64(binary.LittleEndian.Uint32(pairs))
	if n > uint64(len(pairs)-4)/8 {
		return "", false
	}
	sizes := pairs[4 : 4+8*n]
	data := uint64(4 + 8*n)
	for i := uint64(0); i < n; i++ {
		kl := uint64(binary.LittleEndian.Uint32(sizes[8*i:]))
		vl := uint64(binary.LittleEndian.Uint32(sizes[8*i+4:]))
		if kl+vl+2 > uint64(len(pairs))-data {
			return "", false
		}
		k, v := pairs[data:data+kl], pairs[data+kl+1:data+kl+1+vl]
		data += kl + vl + 2
		if string(k) == name {
			if vl == 0 {
				return "", true
			}
			return unsafe.String(&v[0], len(v)), true
		}
	}
	return "", false
}
