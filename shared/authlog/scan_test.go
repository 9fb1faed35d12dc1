package authlog

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/mcpmesh/gateway/shared/policy"
)

// TestSpecialIndex: every special byte, at every offset of strings of every length up to
// 80 (the 32-byte turns, the words, the overlapping last word and the short tail), is found
// from every start, also from just after it, and the first of several wins; a string without
// one gives its length.
func TestSpecialIndex(t *testing.T) {
	t.Parallel()
	specialBytes := []byte{'"', '\\', 0x00, 0x1f, '\n', 0x80, 0xc3, 0xff}
	for n := 0; n <= 80; n++ {
		// Ordinary bytes just above the special ranges, where a borrow from a special byte
		// before them would show.
		plain := bytes.Repeat([]byte(" !#]\x7f a"), 14)[:n]
		for from := 0; from <= n; from++ {
			if got := specialIndex(string(plain), from); got != n {
				t.Fatalf("len %d from %d, no special byte: got %d", n, from, got)
			}
		}
		for at := 0; at < n; at++ {
			for _, c := range specialBytes {
				b := bytes.Clone(plain)
				b[at] = c
				if at+1 < n {
					b[n-1] = '"' // a later special byte does not hide the first
				}
				for from := 0; from <= n; from++ {
					want := naiveSpecialIndex(b, from)
					if got := specialIndex(string(b), from); got != want {
						t.Fatalf("%q from %d: got %d, want %d", b, from, got, want)
					}
				}
			}
		}
	}
	// Bytes just outside the special ranges.
	for _, c := range []byte{0x20, '!', '#', '[', ']', 0x7f} {
		b := bytes.Repeat([]byte{c}, 40)
		if got := specialIndex(string(b), 0); got != len(b) {
			t.Errorf("%#x: got %d, want %d", c, got, len(b))
		}
	}
}

func naiveSpecialIndex(b []byte, i int) int {
	for ; i < len(b); i++ {
		if isSpecial(b[i]) {
			return i
		}
	}
	return i
}

// TestScan_SameAsBefore: the single-pass scanner writes exactly what the separate scans it
// replaced wrote (scanref_test.go), for strings that need escaping at every position.
func TestScan_SameAsBefore(t *testing.T) {
	t.Parallel()
	pieces := []string{"a", `"`, `\`, `\\`, `\"`, "\n", "\x00", "\x7f", "é", "\u0085", "\u2028", "\u2029", "\xff", "\xe2\x80", "😀", "\t", "\r"}
	for _, p := range pieces {
		for _, q := range pieces {
			for _, n := range []int{0, 1, 7, 8, 9, 31, 32, 33, 40} {
				x := strings.Repeat("x", n)
				for _, s := range []string{p + x + q, x + p + q, p + q + x, x + p + x + q + x} {
					checkSameAsBefore(t, s)
				}
			}
		}
	}
}

// FuzzScan compares the record's string writing (appendString's content and the strings of
// mcp-tool-parameters) with the implementation it replaced (scanref_test.go): the bytes must be
// the same for any input. Seeds: testdata/fuzz/FuzzScan.
func FuzzScan(f *testing.F) {
	for _, s := range []string{"", "plain", `{"a":"b\"c\\"}`, "{\"text\":\"" + strings.Repeat("x", 40) + "\"}",
		"{\"k\":\"\xff\u2028\\\\\"}", "{\"k\":\"a\\\n\"}", `{"password":"x","q":["\u0000"]}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkSameAsBefore(t, s)
	})
}

func checkSameAsBefore(t *testing.T, s string) {
	t.Helper()
	if got, want := appendStringContent([]byte("p"), s), refAppendStringContent([]byte("p"), s); !bytes.Equal(got, want) {
		t.Fatalf("appendStringContent(%q):\ngot  %q\nwant %q", s, got, want)
	}
	for _, o := range []Options{{}, {Redact: []string{"$.a.b", "K", "password"}}} {
		r, ref := newRedactor(o), newRedactor(o)
		for _, raw := range []string{s, `{"k":"` + s + `"}`, `{"` + s + `":1}`, `{"a":[` + s + `]}`} {
			got := appendValidatedObject([]byte("p"), raw, r)
			want := refAppendValidatedObject([]byte("p"), raw, ref)
			if !bytes.Equal(got, want) {
				t.Fatalf("appendValidatedObject(%q):\ngot  %q\nwant %q", raw, got, want)
			}
		}
	}
}

// TestAppendReasons_InTheOrderOfAll: a reason list names the reasons of the set in the order
// policy.Reasons.All yields them, and nothing for bits that name no reason.
func TestAppendReasons_InTheOrderOfAll(t *testing.T) {
	t.Parallel()
	sets := []policy.Reasons{0, 1, 1 << 31, ^policy.Reasons(0), knownReasons, 0x5555_5555, 0xaaaa_aaaa}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 1000 {
		sets = append(sets, policy.Reasons(rng.Uint32()))
	}
	for _, rs := range sets {
		want := []byte{'['}
		for r := range rs.All() {
			if len(want) > 1 {
				want = append(want, ',')
			}
			want = appendString(want, r.String())
		}
		want = append(want, ']')
		if got := appendReasons(nil, rs); !bytes.Equal(got, want) {
			t.Fatalf("%#x: got %s, want %s", uint32(rs), got, want)
		}
	}
}
