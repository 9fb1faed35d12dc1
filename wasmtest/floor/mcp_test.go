package floor

import (
	"encoding/binary"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpmesh/gateway/filter/jsonrpc"
	"github.com/mcpmesh/gateway/filter/plugin/plugintest"
	"github.com/mcpmesh/gateway/shared/jsontext"
)

// BenchmarkFloorLogic is what the floor/mcp module does per request, without the ABI: the
// request ID and the Authorization value found in the serialised request headers (those
// wasmtest/filtertest's driver sends), the bearer token taken from it, its keyed hash looked
// up in the cache, the
// 1 KiB body of plugintest's ToolsCall1KiB validated and its method and tool read, the tool
// checked against the decision's allow set. Built for wasip1 (`GOOS=wasip1 GOARCH=wasm go test
// -c`) it runs under V8 (build/wasi-node.mjs) and wazero (wasmtest/cmd/wasirun) as `make
// bench` runs BenchmarkRequest_Native, the plugin's logic: the floor of that column.
func BenchmarkFloorLogic(b *testing.B) {
	req := plugintest.BenchRequests()["ToolsCall1KiB"]
	hs := [][2]string{{":method", req.Method}, {":path", req.Path}, {":authority", req.Authority}, {":scheme", "https"},
		{"x-request-id", plugintest.RequestID}, {"content-length", strconv.Itoa(len(req.Chunks[0]))}}
	hs = append(hs, req.Headers...)
	p := pairs(hs)
	auth, _ := HeaderValue(p, "authorization")
	// The proxy hands the body over in a buffer of its own, which the logic reads in place.
	body := []byte(req.Chunks[0])
	c := NewCache()
	tok, _ := BearerToken(auth)
	c.Put(tok, &Decision{User: "floor-user", Tools: []string{"echo", "add"}})
	var msg [1]jsonrpc.Message
	b.Run("ToolsCall1KiB", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if id, ok := HeaderValue(p, "x-request-id"); !ok || id != plugintest.RequestID {
				b.Fatal("no request ID")
			}
			auth, _ := HeaderValue(p, "authorization")
			tok, ok := BearerToken(auth)
			if !ok {
				b.Fatal("no token")
			}
			d := c.Get(tok)
			if d == nil {
				b.Fatal("no decision")
			}
			call, ok := ReadCall(&msg, body)
			if !ok || call.Method != jsonrpc.MethodToolsCall || !d.Allows(call.Tool) {
				b.Fatalf("call %+v, ok %v: want an allowed tools/call", call, ok)
			}
		}
	})
	// The validation alone (what ReadCall's reader does before it reads the members), to
	// tell how much of ReadCall is the byte scan every JSON reader must make.
	b.Run("Validate1KiB", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if v := jsontext.Validate(body, jsontext.MaxDepth); v != jsontext.Valid {
				b.Fatalf("verdict %v", v)
			}
		}
	})
	// The body's validation and reading alone, to tell its share of the above.
	b.Run("ReadCall1KiB", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if call, ok := ReadCall(&msg, body); !ok || call.Tool != "echo" {
				b.Fatalf("call %+v, ok %v: want a tools/call of echo", call, ok)
			}
		}
	})
}

func TestBearerToken(t *testing.T) {
	for _, tc := range []struct {
		in, tok string
		ok      bool
	}{
		{"Bearer abc", "abc", true},
		{"bEaReR a.b-c_d~e+f/g=", "a.b-c_d~e+f/g=", true},
		{"Bearer ", "", false},
		{"Bearer", "", false},
		{"Basic abc", "", false},
		{"Bearer a b", "", false},
		{"Bearer a\x7f", "", false},
		{"", "", false},
	} {
		tok, ok := BearerToken(tc.in)
		if tok != tc.tok || ok != tc.ok {
			t.Errorf("BearerToken(%q) = %q, %v; want %q, %v", tc.in, tok, ok, tc.tok, tc.ok)
		}
	}
}

func TestCache(t *testing.T) {
	c := NewCache()
	d := &Decision{User: "u", Tools: []string{"echo"}}
	if c.Get("t") != nil {
		t.Fatal("empty cache found a decision")
	}
	c.Put("t", d)
	if c.Get("t") != d || c.Get("u") != nil {
		t.Fatal("Get does not return what Put stored, for that token only")
	}
	if !d.Allows("echo") || d.Allows("ech") || d.Allows("") {
		t.Fatal("Allows is not membership of the allow set")
	}
}

func TestReadCall(t *testing.T) {
	var msg [1]jsonrpc.Message
	for _, tc := range []struct {
		body string
		call Call
		ok   bool
	}{
		{plugintest.ToolsCallBody(1024), Call{Method: "tools/call", Tool: "echo"}, true},
		{`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, Call{Method: "tools/list"}, true},
		{`[{"jsonrpc":"2.0","id":2,"method":"tools/list"}]`, Call{}, false},
		{`{"jsonrpc":"2.0","id":1,"method":`, Call{}, false},
		{`not json`, Call{}, false},
	} {
		call, ok := ReadCall(&msg, []byte(tc.body))
		if call != tc.call || ok != tc.ok {
			t.Errorf("ReadCall(%.40q) = %+v, %v; want %+v, %v", tc.body, call, ok, tc.call, tc.ok)
		}
	}
}

// pairs serialises headers as proxy-wasm does (its own writer, for the tests).
func pairs(hs [][2]string) []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(len(hs)))
	for _, h := range hs {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(h[0])))
		b = binary.LittleEndian.AppendUint32(b, uint32(len(h[1])))
	}
	for _, h := range hs {
		b = append(append(append(append(b, h[0]...), 0), h[1]...), 0)
	}
	return b
}

func TestHeaderValue(t *testing.T) {
	hs := [][2]string{{":method", "POST"}, {"x-empty", ""}, {"authorization", "Bearer t"}, {"authorization", "second"}}
	p := pairs(hs)
	for _, tc := range []struct {
		pairs []byte
		name  string
		v     string
		ok    bool
	}{
		{p, ":method", "POST", true},
		{p, "authorization", "Bearer t", true},
		{p, "x-empty", "", true},
		{p, "missing", "", false},
		{p[:len(p)-1], "authorization", "Bearer t", true}, // the last pair is cut, not this one
		{p[:len(p)-22], "authorization", "", false},       // into the first authorization pair
		{nil, ":method", "", false},
		{[]byte{0xff, 0xff, 0xff, 0xff}, ":method", "", false},
		{pairs(nil), ":method", "", false},
	} {
		v, ok := HeaderValue(tc.pairs, tc.name)
		if v != tc.v || ok != tc.ok {
			t.Errorf("HeaderValue(%d bytes, %q) = %q, %v; want %q, %v", len(tc.pairs), tc.name, v, ok, tc.v, tc.ok)
		}
	}
}

// FuzzHeaderValue: HeaderValue never panics, and on a well-formed map it finds what a plain
// search of the headers finds.
func FuzzHeaderValue(f *testing.F) {
	f.Add([]byte("authorization"), []byte("Bearer x"), []byte("authorization"), 0)
	f.Add([]byte(":path"), []byte("/mcp"), []byte(":method"), 3)
	f.Fuzz(func(t *testing.T, k, v, name []byte, cut int) {
		hs := [][2]string{{":method", "POST"}, {string(k), string(v)}, {"x", "y"}}
		p := pairs(hs)
		want, wantOK := "", false
		for _, h := range hs {
			if h[0] == string(name) {
				want, wantOK = h[1], true
				break
			}
		}
		if got, ok := HeaderValue(p, string(name)); got != want || ok != wantOK {
			t.Fatalf("HeaderValue(%q) = %q, %v; want %q, %v", name, got, ok, want, wantOK)
		}
		if cut > 0 && cut < len(p) {
			HeaderValue(p[:cut], string(name))
		}
		HeaderValue(append(append([]byte{}, k...), v...), http.CanonicalHeaderKey(strings.ToLower(string(name))))
	})
}
