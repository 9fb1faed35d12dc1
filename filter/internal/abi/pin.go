package abi

// maxAllocation bounds one proxy_on_memory_allocate request. A larger request fails (the host
// sees pointer 0) instead of running the Go runtime out of memory, which would be fatal.
const maxAllocation = 64 << 20

// pinSet holds the buffers handed to the host by proxy_on_memory_allocate until the host call
// that requested them has returned. Without it, a garbage collection triggered by a second
// allocation inside the same host call could free the first buffer before the guest has seen
// the pointer the host wrote for it.
type pinSet struct {
	bufs [][]byte
}

// alloc returns a zeroed buffer of size bytes (at least one, so the pointer is never nil for a
// valid request) and pins it. It returns nil when size exceeds maxAllocation.
func (p *pinSet) alloc(size uint32) *byte {
	if size > maxAllocation {
		return nil
	}
	n := int(size)
	if n == 0 {
		n = 1
	}
	b := make([]byte, n)
	p.bufs = append(p.bufs, b)
	return &b[0]
}

// release unpins every buffer. The caller must already hold a reference to each buffer it
// still needs (the out-parameter variables the host wrote to).
func (p *pinSet) release() {
	clear(p.bufs)
	p.bufs = p.bufs[:0]
}

// slice returns the first n bytes of the pinned buffer that starts at p: the memory the host
// reported through a **ret out-parameter. ok is false when p is not the start of a pinned
// buffer of at least n bytes, so a confused host cannot make the guest read memory it does not
// own. n == 0 yields nil and true whatever p is.
func (p *pinSet) slice(ptr *byte, n uint32) (b []byte, ok bool) {
	if n == 0 {
		return nil, true
	}
	for _, buf := range p.bufs {
		if &buf[0] == ptr && uint64(len(buf)) >= uint64(n) {
			return buf[:n:n], true
		}
	}
	return nil, false
}

// pinned reports how many buffers are pinned.
func (p *pinSet) pinned() int { return len(p.bufs) }
