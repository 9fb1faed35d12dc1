package gateway

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcpmesh/gateway/shared/authlog"
	"github.com/mcpmesh/gateway/shared/jsontext"
	"github.com/mcpmesh/gateway/wasmtest/host"
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
	// text, when set, writes records in next's format itself (NewLogger sets it for a text
	// handler of its own, and WithAttrs and WithGroup drop it, as its lines would lack their
	// attributes).
	text *textRecords
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
	rec, ok := authorizationRecord(msg)
	if !ok {
		return h.next.Handle(ctx, r)
	}
	if h.raw != nil {
		_, err := io.WriteString(h.raw, msg+"\n")
		return err
	}
	if h.text != nil {
		if done, err := h.text.write(r, rec); done {
			return err
		}
	}
	return h.next.Handle(ctx, recordAttrs(r, rec))
}

// IsAuthorizationRecord reports whether a proxy log line is one of the filter's authorization
// records: a JSON object (nested at most jsontext.MaxDepth deep) whose message is
// authlog.Message.
func IsAuthorizationRecord(line string) bool {
	_, ok := authorizationRecord(line)
	return ok
}

// authorizationRecord is IsAuthorizationRecord that also returns the record it read.
func authorizationRecord(line string) (jsontext.Value, bool) {
	if !strings.HasPrefix(line, "{") || !jsontext.ValidString(line) {
		return jsontext.Value{}, false
	}
	rec := jsontext.Parse(line)
	return rec, rec.Get("message").String() == authlog.Message
}

// recordAttrs turns the record into a slog record with the host's attributes of r.
func recordAttrs(r slog.Record, rec jsontext.Value) slog.Record {
	out := slog.NewRecord(recordTime(rec, r.Time), r.Level, authlog.Message, r.PC)
	for k, v := range rec.Members() {
		switch key := k.String(); key {
		case "message", "time", "level":
		default:
			out.AddAttrs(jsonAttr(key, v))
		}
	}
	r.Attrs(func(a slog.Attr) bool { out.AddAttrs(a); return true })
	return out
}

// recordTime is the record's `time` when it holds an RFC 3339 time, else host.
func recordTime(rec jsontext.Value, host time.Time) time.Time {
	if ts := rec.Get("time"); ts.Exists() {
		if p, err := time.Parse(time.RFC3339Nano, ts.String()); err == nil {
			return p
		}
	}
	return host
}

// jsonAttr is a record member as an attribute: strings, booleans and numbers as such (a
// number as an integer when it is one), lists, objects and null as their JSON text.
func jsonAttr(key string, v jsontext.Value) slog.Attr {
	switch v.Kind() {
	case jsontext.String:
		return slog.String(key, v.String())
	case jsontext.True, jsontext.False:
		return slog.Bool(key, v.Kind() == jsontext.True)
	case jsontext.Number:
		f, _ := strconv.ParseFloat(v.Raw(), 64) // ±Inf out of range, as gjson read it
		if i := v.Int(); float64(i) == f {
			return slog.Int64(key, i)
		}
		return slog.Float64(key, f)
	}
	return slog.String(key, v.Raw())
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
		return slog.New(&recordHandler{next: slog.NewTextHandler(w, opts), text: &textRecords{w: w}}), nil
	}
	return nil, fmt.Errorf("-log-format must be text or json, got %q", format)
}
