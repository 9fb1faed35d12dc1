package host

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// hostileHeaders are header maps a client or an upstream can send, or a program using
// Handler can build: names from the common-name table, the same name in several spellings
// (only a map built by hand has them), names net/http leaves uncanonicalized, huge names,
// hop-by-hop names, many distinct names.
func hostileHeaders() map[string]http.Header {
	many := http.Header{}
	for i := range 600 {
		many[http.CanonicalHeaderKey(fmt.Sprintf("x-n%d", i))] = []string{fmt.Sprint(i), "b"}
	}
	table := http.Header{}
	for i, n := range commonHeaders {
		table[http.CanonicalHeaderKey(n)] = []string{fmt.Sprint(i)}
	}
	return map[string]http.Header{
		"table": table,
		"common": {"Content-Type": {"application/json"}, "Authorization": {"Bearer a", "Bearer b"},
			"Mcp-Session-Id": {"s1"}, "Set-Cookie": {"a=1", "b=2", "c=3"}, "X-Gateway-Assertion": {"forged"}},
		"spellings": {"Content-Type": {"a", "b"}, "content-type": {"c"}, "CONTENT-TYPE": {"d"},
			"X-Foo": {"1"}, "x-foo": {"2"}, "X-FOO": {"3"}},
		"uncanonical": {"X_Gateway_Assertion": {"u"}, "x-gateway-assertion": {"l"}, "Ünï": {"v"},
			"Bad Name": {"w"}},
		"huge":     {strings.Repeat("X-Long-", 10000): {strings.Repeat("v", 1<<16)}},
		"hopbyhop": {"Connection": {"close"}, "Te": {"trailers"}, "Transfer-Encoding": {"chunked"}, "Upgrade": {"h2c"}, "Host": {"h"}, "Keep-Alive": {"1"}, "Proxy-Connection": {"x"}, "X-Ok": {"1"}},
		"empty":    {"X-Empty": {""}, "X-None": {}},
		"many":     many,
		"values":   {"X-V": {" lead", "trail ", "a,b", "\t", "é"}},
	}
}

// byName groups fields by name, keeping the order of each name's values: what the filter and
// the upstream can rely on (the order of different names follows the map's).
func byName(h Headers) map[string][]string {
	m := map[string][]string{}
	for _, f := range h {
		m[f.Name] = append(m[f.Name], f.Value)
	}
	return m
}

// requestHeaders gives the filter what it gave before the common-name table: every field
// under strings.ToLower of its name, values unchanged and in order, hop-by-hop fields dropped.
func TestRequestHeaders_HostileSetsAsEnvoySeesThem(t *testing.T) {
	for name, hdr := range hostileHeaders() {
		t.Run(name, func(t *testing.T) {
			r, _ := http.NewRequest(http.MethodPost, "http://gw/mcp", nil)
			r.Header = hdr
			got := requestHeaders(r)
			want := map[string][]string{}
			for n, vals := range hdr {
				l := strings.ToLower(n)
				if hopByHop[l] {
					continue
				}
				if len(vals) > 0 { // a name without values gives no field
					want[l] = append(want[l], vals...)
				}
			}
			g := byName(got[4:])
			for n := range g {
				if n != strings.ToLower(n) {
					t.Errorf("name %q is not lower case", n)
				}
			}
			// Values of names that differ only in case come in map order: compare as sets
			// for those, in order otherwise.
			for n, w := range want {
				gv := g[n]
				if spellings(hdr, n) > 1 {
					gv, w = slices.Sorted(slices.Values(gv)), slices.Sorted(slices.Values(w))
				}
				if !slices.Equal(gv, w) {
					t.Errorf("%q: %q, want %q", n, gv, w)
				}
			}
			if len(g) != len(want) {
				t.Errorf("%d names, want %d", len(g), len(want))
			}
		})
	}
}

func spellings(h http.Header, lower string) int {
	n := 0
	for k := range h {
		if strings.ToLower(k) == lower {
			n++
		}
	}
	return n
}

// addFields puts what the filter released under http.CanonicalHeaderKey of each name, values
// in order after those dst held, and the values of different names share an array without a
// write to one reaching another: appending to, setting or changing one name's values leaves
// the others as they were.
func TestAddFields_CanonicalNamesAndNoAliasing(t *testing.T) {
	table := Headers{}
	for _, n := range commonHeaders {
		table = append(table, Header{n, n})
	}
	got := http.Header{}
	addFields(got, table, isStatus)
	for _, n := range commonHeaders {
		if v := got[http.CanonicalHeaderKey(n)]; len(v) != 1 || v[0] != n {
			t.Fatalf("%q under its canonical name: %q", n, v)
		}
	}
	h := Headers{{":status", "200"}, {"content-type", "a"}, {"Content-Type", "b"}, {"x-foo", "1"},
		{"set-cookie", "c1"}, {"x_foo", "u"}, {"set-cookie", "c2"}, {"X-FOO", "2"}, {"content-length", "3"}}
	dst := http.Header{"Set-Cookie": {"old"}}
	addFields(dst, h, isStatus)
	want := http.Header{"Content-Type": {"a", "b"}, "X-Foo": {"1", "2"}, "Set-Cookie": {"old", "c1", "c2"},
		http.CanonicalHeaderKey("x_foo"): {"u"}, "Content-Length": {"3"}}
	if fmt.Sprint(dst) != fmt.Sprint(want) {
		t.Fatalf("got %v\nwant %v", dst, want)
	}
	before := map[string][]string{}
	for k, v := range dst {
		before[k] = slices.Clone(v)
	}
	for k := range dst {
		dst[k] = append(dst[k], "appended-"+k)
		for k2, v2 := range dst {
			if k2 != k && !slices.Equal(v2, before[k2]) && !slices.Equal(v2, append(slices.Clone(before[k2]), "appended-"+k2)) {
				t.Fatalf("appending to %q changed %q: %q", k, k2, v2)
			}
		}
	}
	dst.Set("Content-Length", "9")
	dst["X-Foo"][0] = "changed"
	if dst.Get("Content-Type") != "a" || dst.Values("Set-Cookie")[0] != "old" || dst.Get("Content-Length") != "9" {
		t.Fatalf("a write to one name reached another: %v", dst)
	}
}

// name gives the VM its own copy: bytes the guest writes later into the memory a name was
// read from do not change the name, and the table stays bounded whatever names the guest
// passes (many distinct, huge).
func TestName_OwnCopyAndBounded(t *testing.T) {
	v := &vm{}
	mem := []byte("x-request-id")
	got := v.name(mem)
	copy(mem, "XXXXXXXXXXXX")
	if got != "x-request-id" || v.name([]byte("x-request-id")) != "x-request-id" {
		t.Fatalf("name follows the memory it was read from: %q", got)
	}
	for k := range v.names {
		if k != "x-request-id" || v.names[k] != k {
			t.Fatalf("table holds %q → %q", k, v.names[k])
		}
	}
	huge := bytes.Repeat([]byte("h"), 1<<20)
	if v.name(huge) != string(huge) {
		t.Fatal("huge name changed")
	}
	for i := range 10000 {
		n := fmt.Appendf(nil, "n-%d", i)
		if v.name(n) != string(n) {
			t.Fatalf("name %q changed", n)
		}
	}
	if len(v.names) > maxNames {
		t.Fatalf("%d names kept", len(v.names))
	}
	for k := range v.names {
		if len(k) > maxNameLen {
			t.Fatalf("a name of %d bytes kept", len(k))
		}
	}
}

// marshalPairs writes exactly pairsSize(h) bytes (copyOutPairs's allocation, made before it
// writes), NULs included over whatever the guest's memory held, and nothing past them; the
// encoding is proxy-wasm's.
func TestMarshalPairs_WritesItsSizeExactly(t *testing.T) {
	for _, h := range []Headers{
		{{"a", "b"}},
		{{"", ""}},
		{{":path", "/"}, {"x", strings.Repeat("v", 70000)}, {strings.Repeat("n", 300), ""}, {"nul\x00in", "val\x00ue"}},
	} {
		size := pairsSize(h)
		mem := bytes.Repeat([]byte{0xAA}, size+64)
		marshalPairs(mem[:size:size], h)
		if !bytes.Equal(mem[size:], bytes.Repeat([]byte{0xAA}, 64)) {
			t.Fatalf("wrote past its %d bytes", size)
		}
		// proxy-wasm's encoding, built independently.
		want := binary.LittleEndian.AppendUint32(nil, uint32(len(h)))
		for _, f := range h {
			want = binary.LittleEndian.AppendUint32(want, uint32(len(f.Name)))
			want = binary.LittleEndian.AppendUint32(want, uint32(len(f.Value)))
		}
		for _, f := range h {
			want = append(append(append(append(want, f.Name...), 0), f.Value...), 0)
		}
		if !bytes.Equal(mem[:size], want) {
			t.Fatalf("%q: got %q\nwant %q", h, mem[:size], want)
		}
	}
}
