package jsonrpc

import (
	"strings"
	"testing"
)

// FuzzCheckMCPHeaders checks that CheckHeaders never panics and that whatever it lets through
// agrees with the body: a present Mcp-Method is the method of the one request, a present
// Mcp-Name (decoded) its name, and on 2026-07-28 a request carries Mcp-Method.
// Seeds: testdata/fuzz/FuzzCheckMCPHeaders.
func FuzzCheckMCPHeaders(f *testing.F) {
	f.Add("2026-07-28", "tools/call", "echo", uint8(1), uint8(1), uint8(1),
		[]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`))
	f.Add("2025-11-25", "tools/list", "", uint8(1), uint8(1), uint8(0), []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`))
	f.Add("", "", "=?base64?ZWNobw==?=", uint8(0), uint8(0), uint8(1), []byte(`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`))
	f.Fuzz(func(t *testing.T, version, method, name string, nv, nm, nn uint8, body []byte) {
		b, err := Parse(body)
		if err != nil {
			return
		}
		h := MCPHeaders{ProtocolVersion: version, Method: method, Name: name,
			NProtocolVersion: int(nv % 3), NMethod: int(nm % 3), NName: int(nn % 3)}
		if h.NProtocolVersion == 0 {
			h.ProtocolVersion = ""
		}
		if h.NMethod == 0 {
			h.Method = ""
		}
		if h.NName == 0 {
			h.Name = ""
		}
		v, problem := CheckHeaders(&h, &b)
		if problem != "" {
			for _, hv := range []string{h.Method, h.Name} {
				if len(hv) > 8 && strings.Contains(problem, hv) {
					t.Fatalf("problem %q quotes a header value", problem)
				}
			}
			return
		}
		if h.NProtocolVersion > 1 || h.NMethod > 1 || h.NName > 1 {
			t.Fatalf("repeated header accepted: %+v", h)
		}
		modern := isDate(v) && v >= Revision20260728
		if b.Array {
			if h.NMethod > 0 || h.NName > 0 || modern {
				t.Fatalf("batch accepted with %+v", h)
			}
			return
		}
		m := b.Messages[0]
		if h.NMethod == 1 && (m.Kind == KindResponse || h.Method != m.Method) {
			t.Fatalf("Mcp-Method %q accepted for %+v", h.Method, m)
		}
		if h.NName == 1 {
			dec, ok := decodeHeaderValue(h.Name)
			if !ok || dec != m.Name || m.Name == "" {
				t.Fatalf("Mcp-Name %q accepted for %+v", h.Name, m)
			}
		}
		if modern && m.Kind == KindRequest && (h.NMethod != 1 || m.Name != "" && h.NName != 1) {
			t.Fatalf("2026-07-28 request accepted without its headers: %+v for %+v", h, m)
		}
		if bv, _ := metaString(m.Meta, MetaProtocolVersion); m.Meta != "" && bv != "" && bv != v {
			t.Fatalf("version %q accepted for a body of %q", v, bv)
		}
	})
}

func TestCheckHeaders_DecodesTheBase64Sentinel(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in, want string
		ok       bool
	}{
		{"echo", "echo", true},
		{"=?base64?ZWNobw==?=", "echo", true},
		{"=?base64?ZWNobw?=", "", false},   // unpadded
		{"=?base64?ZWNobx==?=", "", false}, // non-canonical trailing bits
		{"=?base64??=", "", false},
		{"=?base64?=", "=?base64?=", true}, // too short to be the sentinel
		{"ech\x00o", "", false},
		{"échо", "", false},
		{"", "", false},
	} {
		got, ok := decodeHeaderValue(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("decodeHeaderValue(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}
