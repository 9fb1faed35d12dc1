package abi

import "testing"

func TestPinSet_KeepsBuffersUntilRelease(t *testing.T) {
	t.Parallel()
	var p pinSet
	a := p.alloc(3)
	b := p.alloc(0)
	if a == nil || b == nil {
		t.Fatal("alloc returned nil for a valid size")
	}
	if p.pinned() != 2 {
		t.Fatalf("pinned = %d, want 2", p.pinned())
	}
	got, ok := p.slice(a, 3)
	if !ok || len(got) != 3 || &got[0] != a {
		t.Fatalf("slice(a, 3) = %v, %v", got, ok)
	}
	p.release()
	if p.pinned() != 0 {
		t.Fatalf("pinned after release = %d", p.pinned())
	}
}

func TestPinSet_RefusesHugeAllocation(t *testing.T) {
	t.Parallel()
	var p pinSet
	if got := p.alloc(maxAllocation + 1); got != nil {
		t.Fatal("alloc above maxAllocation must fail")
	}
	if p.pinned() != 0 {
		t.Fatal("a failed alloc must not pin")
	}
}

func TestPinSet_SliceRejectsForeignPointersAndOverlongLengths(t *testing.T) {
	t.Parallel()
	var p pinSet
	a := p.alloc(4)
	other := new(byte)
	tests := []struct {
		name string
		ptr  *byte
		n    uint32
		ok   bool
	}{
		{"exact", a, 4, true},
		{"shorter", a, 2, true},
		{"longer than the buffer", a, 5, false},
		{"not a pinned buffer", other, 1, false},
		{"nil with length", nil, 1, false},
		{"empty is always fine", nil, 0, true},
	}
	for _, tt := range tests {
		b, ok := p.slice(tt.ptr, tt.n)
		if ok != tt.ok || (ok && len(b) != int(tt.n)) {
			t.Errorf("%s: slice = %d bytes, %v; want ok=%v", tt.name, len(b), ok, tt.ok)
		}
	}
}
