package abi

// streamTable holds the live stream contexts by id. Every stream is added once and removed
// once, and looked up a few times in between, so in the wasm build a Go map's hashing and
// group probing cost more than the rest of the bookkeeping (a map operation there is a few
// hundred instructions). The host issues context ids from one counter per VM, so the ids of
// the streams alive at one time are nearly consecutive: an open-addressed table indexed by the
// id's low bits finds almost every stream in its own slot, without hashing. The ids come from
// the host, never from the network, so nobody can choose them to collide.
//
// Slots are probed linearly; the table keeps at least half of them empty (so that every probe
// ends at an empty slot) and doubles when it would not. Removal shifts the following entries
// of the probe run back, so that no tombstones accumulate. The table does not shrink, like a
// Go map: its size is that of the most streams the VM held at once.
type streamTable struct {
	slots []*streamContext // nil or a power of two long
	n     int              // live entries
}

// minStreamSlots is the table's first size: a VM's usual number of concurrent streams fits.
const minStreamSlots = 16

// get returns the stream context id, or nil.
func (t *streamTable) get(id uint32) *streamContext {
	if len(t.slots) == 0 {
		return nil
	}
	mask := uint32(len(t.slots) - 1)
	for i := id & mask; ; i = (i + 1) & mask {
		s := t.slots[i]
		if s == nil || s.id == id {
			return s
		}
	}
}

// put adds s, whose id must not be in the table.
func (t *streamTable) put(s *streamContext) {
	if 2*(t.n+1) > len(t.slots) {
		t.grow()
	}
	t.insert(s)
	t.n++
}

func (t *streamTable) insert(s *streamContext) {
	mask := uint32(len(t.slots) - 1)
	i := s.id & mask
	for t.slots[i] != nil {
		i = (i + 1) & mask
	}
	t.slots[i] = s
}

func (t *streamTable) grow() {
	old := t.slots
	t.slots = make([]*streamContext, max(minStreamSlots, 2*len(old)))
	for _, s := range old {
		if s != nil {
			t.insert(s)
		}
	}
}

// remove deletes the stream context id and reports whether it was there.
func (t *streamTable) remove(id uint32) bool {
	if len(t.slots) == 0 {
		return false
	}
	mask := uint32(len(t.slots) - 1)
	i := id & mask
	for {
		s := t.slots[i]
		if s == nil {
			return false
		}
		if s.id == id {
			break
		}
		i = (i + 1) & mask
	}
	// Backward-shift deletion: move each later entry of the run whose home slot does not lie
	// cyclically in (i, j] into the hole, so that every entry stays reachable from its home.
	j := i
	for {
		j = (j + 1) & mask
		s := t.slots[j]
		if s == nil {
			break
		}
		home := s.id & mask
		if (j > i && (home <= i || home > j)) || (j < i && home <= i && home > j) {
			t.slots[i] = s
			i = j
		}
	}
	t.slots[i] = nil
	t.n--
	return true
}

// len returns the number of live entries.
func (t *streamTable) len() int { return t.n }
