package abi

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// TestStreamTable_MatchesMap runs random adds, lookups and removals against a Go map, with
// ids as a host issues them (consecutive, some streams living long) and as it might (sparse,
// colliding in the low bits, wrapping around at 2^32).
func TestStreamTable_MatchesMap(t *testing.T) {
	tests := []struct {
		name string
		next func(r *rand.Rand, last uint32) uint32
	}{
		{"consecutive", func(_ *rand.Rand, last uint32) uint32 { return last + 1 }},
		{"gaps", func(r *rand.Rand, last uint32) uint32 { return last + 1 + r.Uint32N(5) }},
		{"same low bits", func(_ *rand.Rand, last uint32) uint32 { return last + 1024 }},
		{"random", func(r *rand.Rand, _ uint32) uint32 { return r.Uint32() }},
		{"wrapping", func(_ *rand.Rand, last uint32) uint32 { return last + 1 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(1, 2))
			var tab streamTable
			want := map[uint32]*streamContext{}
			var live []uint32
			id := uint32(0)
			if tt.name == "wrapping" {
				id = ^uint32(0) - 3000
			}
			check := func(id uint32) {
				t.Helper()
				if got := tab.get(id); got != want[id] {
					t.Fatalf("get(%d) = %p, want %p", id, got, want[id])
				}
			}
			for step := range 20000 {
				// Grow to a few hundred live streams, then hover around that.
				if len(live) == 0 || (r.IntN(100) < 55 && len(live) < 400) {
					id = tt.next(r, id)
					if want[id] != nil {
						continue
					}
					s := &streamContext{id: id}
					tab.put(s)
					want[id] = s
					live = append(live, id)
				} else {
					k := r.IntN(len(live))
					if r.IntN(4) == 0 {
						k = 0 // the oldest: a long-lived stream ends
					}
					gone := live[k]
					live = append(live[:k], live[k+1:]...)
					if !tab.remove(gone) {
						t.Fatalf("step %d: remove(%d) = false", step, gone)
					}
					delete(want, gone)
					check(gone)
					if tab.remove(gone) {
						t.Fatalf("step %d: second remove(%d) = true", step, gone)
					}
				}
				if tab.len() != len(want) {
					t.Fatalf("step %d: len %d, want %d", step, tab.len(), len(want))
				}
				if len(live) > 0 {
					check(live[r.IntN(len(live))])
				}
				check(r.Uint32())
			}
			for _, id := range live {
				check(id)
			}
		})
	}
}

func TestStreamTable_Empty(t *testing.T) {
	var tab streamTable
	if tab.get(7) != nil || tab.remove(7) || tab.len() != 0 {
		t.Fatal("an empty table holds something")
	}
}

// FuzzStreamTable_MatchesMap runs the operations of a host that chooses every id — the same
// low bits, a live id again (the VM removes the old context first, as contextCreate does),
// ids of streams never created — against a Go map: a lookup never finds another id's
// context, and no operation panics. Each operation is 5 bytes: what to do, then the id.
func FuzzStreamTable_MatchesMap(f *testing.F) {
	f.Add([]byte{0, 1, 0, 0, 0, 0, 17, 0, 0, 0, 0, 33, 0, 0, 0, 1, 17, 0, 0, 0, 2, 33, 0, 0, 0, 2, 1, 0, 0, 0})
	f.Add([]byte{0, 255, 255, 255, 255, 0, 15, 0, 0, 0, 0, 31, 0, 0, 0, 0, 15, 0, 0, 0, 1, 255, 255, 255, 255, 2, 31, 0, 0, 0})
	f.Fuzz(func(t *testing.T, ops []byte) {
		var tab streamTable
		want := map[uint32]*streamContext{}
		for ; len(ops) >= 5; ops = ops[5:] {
			id := binary.LittleEndian.Uint32(ops[1:5])
			switch ops[0] % 3 {
			case 0: // create, replacing a live context of the same id
				if tab.remove(id) != (want[id] != nil) {
					t.Fatalf("remove(%d) before a reuse disagrees with the map", id)
				}
				s := &streamContext{id: id}
				tab.put(s)
				want[id] = s
			case 1:
				if tab.remove(id) != (want[id] != nil) {
					t.Fatalf("remove(%d) disagrees with the map", id)
				}
				delete(want, id)
			case 2:
			}
			if tab.len() != len(want) {
				t.Fatalf("len %d, want %d", tab.len(), len(want))
			}
			if got := tab.get(id); got != want[id] {
				t.Fatalf("get(%d) = %v, want %v", id, got, want[id])
			}
			for wid, ws := range want {
				if got := tab.get(wid); got != ws {
					t.Fatalf("get(%d) = %v, want %v", wid, got, ws)
				}
			}
		}
	})
}
