package gateway

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
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

// BenchmarkRecordHandler is the cost of one authorization record in each of the local
// gateway's formats; text-slog is the text format through slog's text handler, which the text
// logger used to do (and still does for attribute kinds its own writer does not format).
func BenchmarkRecordHandler(b *testing.B) {
	for _, format := range []string{"text", "text-slog", "json"} {
		b.Run(format, func(b *testing.B) {
			l, _ := NewLogger(format, 0, io.Discard)
			if format == "text-slog" {
				l = slog.New(RecordHandler(slog.NewTextHandler(io.Discard, nil), nil))
			}
			b.ReportAllocs()
			for b.Loop() {
				hostRecord(l, record)
			}
		})
	}
}

// textOutputs handles one host record holding line with the text logger NewLogger builds and
// with slog's own text handler behind RecordHandler, and returns both outputs.
func textOutputs(t testing.TB, line string, at time.Time, attrs ...slog.Attr) (fast, viaSlog string) {
	var a, b bytes.Buffer
	l, _ := NewLogger("text", 0, &a)
	ref := RecordHandler(slog.NewTextHandler(&b, &slog.HandlerOptions{Level: slog.LevelInfo}), nil)
	r := slog.NewRecord(at, slog.LevelInfo, line, 0)
	r.AddAttrs(attrs...)
	if err := l.Handler().Handle(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if err := ref.Handle(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	return a.String(), b.String()
}

// The text logger writes authorization records itself; each line must be what slog's text
// handler writes for the same record.
func TestRecordHandler_TextMatchesSlog(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 27, 1, 2, 3, 456789000, time.UTC)
	host := []slog.Attr{slog.String("source", "wasm"), slog.String("plugin", "mcp gateway"), slog.Int("worker", 1),
		slog.Uint64("context", 7), slog.Bool("b", true), slog.Float64("f", 0.25)}
	for _, line := range fuzzRecordSeeds {
		fast, ref := textOutputs(t, line, at, host...)
		if fast != ref {
			t.Errorf("record %s\nfast: %s\nslog: %s", line, fast, ref)
		}
	}
	// A zero host time and a record without a valid time: no time field, as slog writes it.
	fast, ref := textOutputs(t, `{"message":"authorize check","time":"yesterday"}`, time.Time{})
	if fast != ref || strings.Contains(fast, "time=") {
		t.Errorf("fast: %s\nslog: %s", fast, ref)
	}
	// An attribute kind the fast path does not format goes through slog.
	fast, ref = textOutputs(t, record, at, slog.Duration("d", 1500*time.Millisecond), slog.Any("e", io.EOF))
	if fast != ref || !strings.Contains(fast, " d=1.5s e=EOF") {
		t.Errorf("fast: %s\nslog: %s", fast, ref)
	}
}

var fuzzRecordSeeds = []string{
	record,
	`{"message":"authorize check"}`,
	`{"message":"authorize check","time":"2025-06-18T09:30:01+02:00","a b":"x=y","":"","é":"\u00e9\u2028\ud800","q":"\"\\\u0000\u007f\t","del":"a\u007fb"}`,
	`{"message":"authorize check","time":"2025-06-18T09:30:01.9999999Z","n":1e400,"m":-0,"i":9007199254740993,"g":1.5e-7,"z":null,"l":[1,{"a":"\n"}]}`,
	`{"message":"authorize check","level":"warn","message":"again","k":"\u00a0nbsp","k":"ok\\path","fffd":"\ufffd",` + "\"bad\":\"\xff\xe2a\x7f\"}",
	` {"message" : "authorize check" , "x" : { } } `,
}

// FuzzRecordHandler_TextMatchesSlog: for any authorization record, the text logger's own line
// is slog's text handler's line for it.
func FuzzRecordHandler_TextMatchesSlog(f *testing.F) {
	for _, s := range fuzzRecordSeeds {
		f.Add(s, "wasm", int64(1))
	}
	at := time.Date(2026, 11, 27, 1, 2, 3, 456789000, time.UTC)
	f.Fuzz(func(t *testing.T, line, attr string, n int64) {
		if !IsAuthorizationRecord(strings.TrimSpace(line)) {
			return
		}
		fast, ref := textOutputs(t, line, at, slog.String(attr, attr), slog.Int64("n", n))
		if fast != ref {
			t.Fatalf("record %q\nfast: %q\nslog: %q", line, fast, ref)
		}
	})
}

// plainRunEnd stops at the first byte strconv.Quote does not write as itself, wherever it is
// in a word, for every byte value.
func TestPlainRunEnd(t *testing.T) {
	t.Parallel()
	for c := 0; c < 256; c++ {
		for at := 0; at < 20; at++ {
			s := []byte(strings.Repeat("a~ ", 7))
			s[at] = byte(c)
			want := 0
			for want < len(s) && plainQuoted(s[want]) {
				want++
			}
			if got := plainRunEnd(string(s), 0); got != want {
				t.Fatalf("byte %#x at %d: %d, want %d", c, at, got, want)
			}
		}
	}
}

// textNeedsQuoting's word test never skips a byte that needs quoting, wherever it is.
func TestTextNeedsQuoting_EveryByteEveryPlace(t *testing.T) {
	t.Parallel()
	for c := 0; c < 256; c++ {
		for at := 0; at < 20; at++ {
			s := []byte(strings.Repeat("a~\\", 7))
			s[at] = byte(c)
			want := c <= ' ' || c == '=' || c == '"' || c >= utf8.RuneSelf // a lone byte ≥ 0x80 is invalid UTF-8
			if got := textNeedsQuoting(string(s)); got != want {
				t.Fatalf("byte %#x at %d: %v, want %v", c, at, got, want)
			}
		}
	}
}
