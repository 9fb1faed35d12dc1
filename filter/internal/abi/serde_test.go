package abi

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"testing"

	"github.com/mcpmesh/gateway/filter/plugin"
)

func TestHeaderMap_RoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		hs   []plugin.Header
	}{
		{"one pseudo-header", []plugin.Header{{Name: ":path", Value: "/mcp"}}},
		{"several with repeats", []plugin.Header{
			{Name: ":method", Value: "POST"}, {Name: "x-a", Value: "1"}, {Name: "x-a", Value: "2"},
		}},
		{"empty name and value", []plugin.Header{{Name: "", Value: ""}, {Name: "k", Value: ""}}},
		{"bytes that look like framing", []plugin.Header{{Name: "a\x00b", Value: "\x00\x00\x00\x01"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := AppendHeaderMap(nil, tt.hs)
			got, err := ParseHeaderMap(b)
			if err != nil {
				t.Fatalf("ParseHeaderMap: %v", err)
			}
			if !reflect.DeepEqual(got, tt.hs) {
				t.Fatalf("round trip = %q, want %q", got, tt.hs)
			}
		})
	}
}

func TestHeaderMap_EncodesTheSpecLayout(t *testing.T) {
	t.Parallel()
	got := AppendHeaderMap([]byte("prefix"), []plugin.Header{{Name: "a", Value: "bc"}, {Name: "", Value: "d"}})
	want := []byte("prefix" +
		"\x02\x00\x00\x00" + // two pairs
		"\x01\x00\x00\x00\x02\x00\x00\x00" + // len("a"), len("bc")
		"\x00\x00\x00\x00\x01\x00\x00\x00" + // len(""), len("d")
		"a\x00bc\x00\x00d\x00")
	if !bytes.Equal(got, want) {
		t.Fatalf("AppendHeaderMap = %q, want %q", got, want)
	}
}

func TestHeaderMap_EmptyForms(t *testing.T) {
	t.Parallel()
	for _, in := range [][]byte{nil, {}, {0}, {0, 0, 0, 0}} {
		hs, err := ParseHeaderMap(in)
		if err != nil || len(hs) != 0 {
			t.Errorf("ParseHeaderMap(%q) = %q, %v; want empty, nil", in, hs, err)
		}
	}
	if got := AppendHeaderMap(nil, nil); !bytes.Equal(got, []byte{0, 0, 0, 0}) {
		t.Errorf("AppendHeaderMap(nil) = %q", got)
	}
}

func TestHeaderMap_RejectsMalformedInput(t *testing.T) {
	t.Parallel()
	valid := AppendHeaderMap(nil, []plugin.Header{{Name: "k", Value: "v"}})
	hugeCount := binary.LittleEndian.AppendUint32(nil, 0xffffffff)
	hugeLen := append(binary.LittleEndian.AppendUint32(nil, 1), 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0)
	noNUL := bytes.Clone(valid)
	noNUL[len(noNUL)-1] = 'x'
	keyNoNUL := bytes.Clone(valid)
	keyNoNUL[len(keyNoNUL)-3] = 'x'
	tests := map[string][]byte{
		"two bytes":               {1, 0},
		"single non-NUL byte":     {7},
		"count beyond data":       hugeCount,
		"length beyond data":      hugeLen,
		"truncated data":          valid[:len(valid)-1],
		"trailing bytes":          append(bytes.Clone(valid), 0),
		"empty map with trailer":  {0, 0, 0, 0, 1},
		"value without NUL":       noNUL,
		"key without NUL":         keyNoNUL,
		"sizes table cut in half": valid[:8],
	}
	for name, in := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			hs, err := ParseHeaderMap(in)
			if !errors.Is(err, ErrMalformedHeaderMap) {
				t.Fatalf("ParseHeaderMap(%q) = %q, %v; want ErrMalformedHeaderMap", in, hs, err)
			}
		})
	}
}

func TestPropertyPath_JoinsSegmentsWithNUL(t *testing.T) {
	t.Parallel()
	if got := string(PropertyPath("request", "path")); got != "request\x00path" {
		t.Fatalf("PropertyPath = %q", got)
	}
	if got := string(PropertyPath("plugin_root_id")); got != "plugin_root_id" {
		t.Fatalf("PropertyPath = %q", got)
	}
}

// FuzzParseHeaderMap feeds hostile bytes to the decoder: it must never panic, and whatever it
// accepts must re-encode to the same bytes (empty forms aside).
func FuzzParseHeaderMap(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0})
	f.Add(AppendHeaderMap(nil, []plugin.Header{{Name: ":path", Value: "/"}, {Name: "authorization", Value: "Bearer x"}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		hs, err := ParseHeaderMap(b)
		if err != nil {
			if !errors.Is(err, ErrMalformedHeaderMap) {
				t.Fatalf("error %v does not match ErrMalformedHeaderMap", err)
			}
			return
		}
		if len(hs) == 0 {
			return
		}
		if re := AppendHeaderMap(nil, hs); !bytes.Equal(re, b) {
			t.Fatalf("accepted %q but re-encodes to %q", b, re)
		}
	})
}

// FuzzHeaderMapRoundTrip checks that any headers survive encoding and decoding.
func FuzzHeaderMapRoundTrip(f *testing.F) {
	f.Add("x-key", "value", ":path", "/mcp?x=\x00")
	f.Add("", "", "", "")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string) {
		in := []plugin.Header{{Name: k1, Value: v1}, {Name: k2, Value: v2}}
		got, err := ParseHeaderMap(AppendHeaderMap(nil, in))
		if err != nil {
			t.Fatalf("ParseHeaderMap: %v", err)
		}
		if !reflect.DeepEqual(got, in) {
			t.Fatalf("round trip = %q, want %q", got, in)
		}
	})
}

func benchHeaders() []plugin.Header {
	return []plugin.Header{
		{Name: ":method", Value: "POST"}, {Name: ":path", Value: "/mcp"}, {Name: ":authority", Value: "mcp.example.com"},
		{Name: ":scheme", Value: "https"}, {Name: "authorization", Value: "Bearer 0123456789abcdef0123456789abcdef"},
		{Name: "content-type", Value: "application/json"}, {Name: "accept", Value: "application/json, text/event-stream"},
		{Name: "mcp-session-id", Value: "3f1c2a9e-7b7d-4c1e-9f3a-0d2b5e6c7a81"}, {Name: "x-request-id", Value: "b7e1c1f0"},
	}
}

func BenchmarkAppendHeaderMap(b *testing.B) {
	hs := benchHeaders()
	buf := make([]byte, 0, 1024)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendHeaderMap(buf[:0], hs)
	}
}

func BenchmarkParseHeaderMap(b *testing.B) {
	enc := AppendHeaderMap(nil, benchHeaders())
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseHeaderMap(enc); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzParseHeaderMap_MatchesReference compares the parser with the one it replaced
// (refParseHeaderMap): the same headers or the same error for any bytes, owned or copied,
// into a destination array with and without room.
func FuzzParseHeaderMap_MatchesReference(f *testing.F) {
	f.Add(AppendHeaderMap(nil, benchHeaders()), uint8(16))
	f.Add(AppendHeaderMap(nil, []plugin.Header{{Name: "", Value: ""}, {Name: "k", Value: ""}}), uint8(0))
	f.Add([]byte{1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 'k', 0, 'v', 0}, uint8(1))
	f.Add([]byte{1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 'k', 0, 'v'}, uint8(1))
	f.Add([]byte{1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0}, uint8(1))
	f.Fuzz(func(t *testing.T, b []byte, room uint8) {
		for _, owned := range []bool{false, true} {
			got, err := parseHeaderMap(make([]plugin.Header, 0, room), bytes.Clone(b), owned)
			want, wantErr := refParseHeaderMap(make([]plugin.Header, 0, room), bytes.Clone(b), owned)
			if (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) {
				t.Fatalf("owned %v: error %v, reference %v", owned, err, wantErr)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("owned %v: %q, reference %q", owned, got, want)
			}
		}
	})
}
