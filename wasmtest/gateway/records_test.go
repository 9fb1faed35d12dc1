package gateway

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
)

// record is an authorization record as the filter writes it (shared/authlog).
var record = `{"level":"info","service":"authorize","time":"2025-06-18T09:30:01.123456789Z","message":"authorize check",` +
	`"request-id":"0d5f6c1e-9a1b-4b8e-a0c0-5a1e2f3b4c5d","user":"u-1","email":"alice@example.com",` +
	`"allow":true,"allow-why-true":["domain-ok","mcp-tool-ok"],"allow-why-false":[],"deny":false,"deny-why-false":["mcp-tool-ok"],` +
	`"mcp-method":"tools/call","mcp-tool":"echo","mcp-tool-parameters":{"text":"` + strings.Repeat("x", 900) + `"},"count":2,"ratio":0.5}`

// hostRecord logs line as the wasm host logs a guest line.
func hostRecord(l *slog.Logger, line string) {
	l.LogAttrs(context.Background(), slog.LevelInfo, line, slog.String("source", "wasm"),
		slog.String("plugin", "mcp-gateway"), slog.Int("worker", 1), slog.Uint64("context", 7))
}

// Each authorization record is printed as itself: with json, the filter's object on its own
// line; with text, its fields (in order, typed) followed by the host's attributes. Other lines
// pass unchanged.
func TestRecordHandler_PrintsRecordsAsThemselves(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	l, _ := NewLogger("json", 0, &buf)
	hostRecord(l, record+"\n")
	hostRecord(l, `{"message":"something else"}`)
	hostRecord(l, `{"message":"authorize check",`) // not JSON: an ordinary line
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 3 || lines[0] != record || !strings.Contains(lines[1], `"msg":"{\"message\":\"something else\"}"`) ||
		!strings.Contains(lines[2], `"msg":"{\"message\":\"authorize check\","`) {
		t.Fatalf("json output:\n%s", buf.String())
	}

	buf.Reset()
	l, _ = NewLogger("text", 0, &buf)
	hostRecord(l, record)
	want := `time=2025-06-18T09:30:01.123Z level=INFO msg="authorize check" service=authorize request-id=0d5f6c1e-9a1b-4b8e-a0c0-5a1e2f3b4c5d ` +
		`user=u-1 email=alice@example.com allow=true allow-why-true="[\"domain-ok\",\"mcp-tool-ok\"]" allow-why-false=[] deny=false ` +
		`deny-why-false="[\"mcp-tool-ok\"]" mcp-method=tools/call mcp-tool=echo mcp-tool-parameters="{\"text\":\"` + strings.Repeat("x", 900) +
		`\"}" count=2 ratio=0.5 source=wasm plugin=mcp-gateway worker=1 context=7` + "\n"
	if got := buf.String(); got != want {
		t.Fatalf("text output:\n%s\nwant\n%s", got, want)
	}
}

func BenchmarkRecordHandler(b *testing.B) {
	for _, format := range []string{"text", "json"} {
		b.Run(format, func(b *testing.B) {
			l, _ := NewLogger(format, 0, io.Discard)
			b.ReportAllocs()
			for b.Loop() {
				hostRecord(l, record)
			}
		})
	}
}
