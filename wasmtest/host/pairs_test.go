package host

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

func TestPairs_RoundTrip(t *testing.T) {
	t.Parallel()
	for _, h := range []Headers{
		nil,
		{{":path", "/"}},
		{{":method", "POST"}, {"x-empty", ""}, {"", "v"}, {"dup", "1"}, {"dup", "2"}},
		{{"bin", "a\x01b\xffc"}},
	} {
		b := MarshalPairs(h)
		got, err := UnmarshalPairs(b)
		if err != nil {
			t.Fatalf("UnmarshalPairs(MarshalPairs(%v)): %v", h, err)
		}
		if len(got) != len(h) {
			t.Fatalf("round trip of %v gave %v", h, got)
		}
		for i := range h {
			if got[i] != h[i] {
				t.Fatalf("round trip of %v gave %v", h, got)
			}
		}
	}
}

func TestPairs_WireFormat(t *testing.T) {
	t.Parallel()
	// The spec's example, with its '1'/'2' typo corrected: {"a": "1", "bb": "2"}.
	want := []byte{2, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0,
		'a', 0, '1', 0, 'b', 'b', 0, '2', 0}
	if got := MarshalPairs(Headers{{"a", "1"}, {"bb", "2"}}); !bytes.Equal(got, want) {
		t.Fatalf("MarshalPairs = %v, want %v", got, want)
	}
}

func TestPairs_RejectsMalformedInput(t *testing.T) {
	t.Parallel()
	good := MarshalPairs(Headers{{"a", "1"}})
	tooMany := make([]byte, 4)
	binary.LittleEndian.PutUint32(tooMany, maxPairsCount+1)
	for name, b := range map[string][]byte{
		"short count":        {1, 0},
		"count beyond data":  {5, 0, 0, 0, 1, 0, 0, 0},
		"too many pairs":     append(tooMany, make([]byte, 8*(maxPairsCount+1))...),
		"missing terminator": append(append([]byte(nil), good[:len(good)-1]...), 'x'),
		"trailing bytes":     append(append([]byte(nil), good...), 0),
		"truncated value":    good[:len(good)-2],
		"huge length":        {1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0},
		"lone nul":           {0},
	} {
		if _, err := UnmarshalPairs(b); !errors.Is(err, errBadPairs) {
			t.Errorf("%s: UnmarshalPairs(%v) error = %v, want errBadPairs", name, b, err)
		}
		if h := toPairs(b); len(h) != 0 {
			t.Errorf("%s: toPairs = %v, want empty (cpp-host drops malformed maps)", name, h)
		}
	}
	if _, err := UnmarshalPairs(make([]byte, maxPairsBytes+1)); err == nil {
		t.Error("UnmarshalPairs accepted more than 1 MiB")
	}
}

func FuzzUnmarshalPairs(f *testing.F) {
	f.Add(MarshalPairs(Headers{{":path", "/x"}, {"k", "v"}}))
	f.Add([]byte{0})
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := UnmarshalPairs(b)
		if err != nil {
			return
		}
		if again, err := UnmarshalPairs(MarshalPairs(h)); err != nil || len(again) != len(h) {
			t.Fatalf("re-marshal of %v: %v %v", h, again, err)
		}
	})
}
