package jsonrpc

import (
	"strconv"
	"strings"
	"testing"

	"github.com/mcpmesh/gateway/shared/jsontext"
)

// BenchmarkRewriteToolLists filters a tools/list result of 50 tools with schemas (one refused).
func BenchmarkRewriteToolLists(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"jsonrpc":"2.0","id":2,"result":{"tools":[`)
	for i := range 50 {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(`{"name":"tool` + strconv.Itoa(i) + `","description":"` + strings.Repeat("d", 200) + `","inputSchema":{"type":"object","properties":{"x":{"type":"string"}}}}`)
	}
	sb.WriteString(`]}}`)
	body := []byte(sb.String())
	f := &ToolListFilter{IDs: []string{IDKey("2")}, Allow: func(name, _ string) bool { return name != "tool25" }}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, res, err := RewriteToolLists(body, f); err != nil || res.Removed != 1 {
			b.Fatal(err, res)
		}
	}
}

// BenchmarkValidate validates a tools/call body of 1 KiB (the validator is
// shared/jsontext's; the body is this package's).
func BenchmarkValidate(b *testing.B) {
	body := toolsCallBody(1024)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if jsontext.Validate(body, MaxDepth) != jsontext.Valid {
			b.Fatal("invalid")
		}
	}
}
