package gateway

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/mcpmesh/gateway/shared/authlog"
	"github.com/mcpmesh/gateway/wasmtest/host"
	"github.com/tidwall/gjson"
)

// RecordHandler returns a slog.Handler that passes every record to next unchanged except the
// filter's authorization records: the proxy log lines whose message is an "authorize check"
// JSON object (shared/authlog). The wasm host logs each guest line as the message of a slog
// record, so without this handler a record would appear as a JSON string escaped inside
// another log line.
//
// With raw set (a JSON logger), each authorization record is written to raw as itself: the
// filter's JSON object, unchanged, on a line of its own. Without raw (a text logger), it is
// handed to next as a record whose message is "authorize check", whose time is the record's
// `time`, and whose attributes are the record's other fields in their order (strings,
// numbers and booleans as such; lists, objects and null as their JSON text), followed by the
// host's own attributes (source, plugin, worker, context). raw must be safe for concurrent
// writes of whole lines (SyncWriter makes one).
func RecordHandler(next slog.Handler, raw io.Writer) slog.Handler {
	return &recordHandler{next: next, raw: raw}
}

type recordHandler struct {
	next slog.Handler
	raw  io.Writer
}

func (h *recordHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

func (h *recordHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &recordHandler{next: h.next.WithAttrs(as), raw: h.raw}
}

func (h *recordHandler) WithGroup(name string) slog.Handler {
	return &recordHandler{next: h.next.WithGroup(name), raw: h.raw}
}

func (h *recordHandler) Handle(ctx context.Context, r slog.Record) error {
	msg := strings.TrimSpace(r.Message)
	if !IsAuthorizationRecord(msg) {
		return h.next.Handle(ctx, r)
	}
	if h.raw != nil {
		_, err := io.WriteString(h.raw, msg+"\n")
		return err
	}
	return h.next.Handle(ctx, recordAttrs(r, msg))
}

// IsAuthorizationRecord reports whether a proxy log line is one of the filter's authorization
// records: a JSON object whose message is authlog.Message.
func IsAuthorizationRecord(line string) bool {
	return strings.HasPrefix(line, "{") && gjson.Valid(line) && gjson.Get(line, "message").String() == authlog.Message
}

// recordAttrs turns the record JSON into a slog record with the host's attributes of r.
func recordAttrs(r slog.Record, line string) slog.Record {
	t := r.Time
	if ts := gjson.Get(line, "time"); ts.Exists() {
		if p, err := time.Parse(time.RFC3339Nano, ts.String()); err == nil {
			t = p
		}
	}
	out := slog.NewRecord(t, r.Level, authlog.Message, r.PC)
	gjson.Parse(line).ForEach(func(k, v gjson.Result) bool {
		switch key := k.String(); key {
		case "message", "time", "level":
		default:
			out.AddAttrs(jsonAttr(key, v))
		}
		return true
	})
	r.Attrs(func(a slog.Attr) bool { out.AddAttrs(a); return true })
	return out
}

func jsonAttr(key string, v gjson.Result) slog.Attr {
	switch v.Type {
	case gjson.String:
		return slog.String(key, v.String())
	case gjson.True, gjson.False:
		return slog.Bool(key, v.Bool())
	case gjson.Number:
		if i := v.Int(); float64(i) == v.Float() {
			return slog.Int64(key, i)
		}
		return slog.Float64(key, v.Float())
	}
	return slog.String(key, v.Raw)
}

// SyncWriter serializes writes to w, so that a slog handler and RecordHandler's raw output
// can share one writer without interleaving lines.
func SyncWriter(w io.Writer) io.Writer { return &syncWriter{w: w} }

type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// NewLogger builds the local gateway's logger: format "text" or "json" on w, at a level that
// lets the filter's lines at the proxy log level wasm through, with the filter's
// authorization records printed as themselves (RecordHandler). w is wrapped in a SyncWriter.
func NewLogger(format string, wasm host.LogLevel, w io.Writer) (*slog.Logger, error) {
	lvl := slog.LevelInfo
	switch wasm {
	case host.LogTrace:
		lvl = slog.LevelDebug - 4
	case host.LogDebug:
		lvl = slog.LevelDebug
	}
	w = SyncWriter(w)
	opts := &slog.HandlerOptions{Level: lvl}
	switch format {
	case "json":
		return slog.New(RecordHandler(slog.NewJSONHandler(w, opts), w)), nil
	case "text":
		return slog.New(RecordHandler(slog.NewTextHandler(w, opts), nil)), nil
	}
	return nil, fmt.Errorf("-log-format must be text or json, got %q", format)
}
