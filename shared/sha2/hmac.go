package sha2

// MAC is HMAC-SHA256 with a fixed key (RFC 2104): Reset, then Write the message, then Sum.
// A MAC is not safe for concurrent use.
type MAC struct {
	inner, outer digest
	// The chaining values after the key's inner and outer pads, so that Reset does not hash
	// them again.
	innerIV, outerIV [8]uint32
}

// NewMAC returns an HMAC-SHA256 keyed with key, ready for Write.
func NewMAC(key []byte) *MAC {
	if len(key) > BlockSize {
		s := Sum256(key)
		key = s[:]
	}
	var ipad, opad [BlockSize]byte
	copy(ipad[:], key)
	copy(opad[:], key)
	for i := range ipad {
		ipad[i] ^= 0x36
		opad[i] ^= 0x5c
	}
	m := &MAC{}
	m.innerIV, m.outerIV = iv, iv
	block(&m.innerIV, ipad[:])
	block(&m.outerIV, opad[:])
	m.Reset()
	return m
}

// Reset starts a new message.
func (m *MAC) Reset() {
	m.inner.h = m.innerIV
	m.inner.n = 0
	m.inner.len = BlockSize
}

// Write adds p to the message. It never fails.
func (m *MAC) Write(p []byte) {
	m.inner.write(p)
}

// Sum appends the MAC of the message written since Reset to dst. The MAC must be Reset
// before the next message.
func (m *MAC) Sum(dst []byte) []byte {
	var in [Size]byte
	m.inner.sum(in[:0])
	m.outer.h = m.outerIV
	m.outer.n = 0
	m.outer.len = BlockSize
	m.outer.write(in[:])
	return m.outer.sum(dst)
}

// Equal reports whether a and b are equal, in a time that depends on their lengths only.
func Equal(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	var v byte
	for i := range a {
		v |= a[i] ^ b[i]
	}
	return v == 0
}
