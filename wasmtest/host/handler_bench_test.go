package host

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// BenchmarkHandlerToolCall is an authorized MCP tools/call through Host.Handler, as the local
// gateway runs it, in front of an in-process upstream answering 1.1 KB of JSON with its
// length: the host's Go side per request (request conversion, body hand-off, the filter's
// callbacks, the response through the filter), without sockets. allocs/op counts the Go
// heap allocations of the whole request, the benchmark's own request and writer included.
func BenchmarkHandlerToolCall(b *testing.B) {
	m, _ := realFilter(b)
	h, err := New(context.Background(), m, Options{PluginConfig: filterConfig(b), LogLevel: LogInfo,
		Logger:   slog.New(slog.DiscardHandler),
		Clusters: map[string]Cluster{"tokensvc": {Handler: &checkAPI{}}}})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	reqBody := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` +
		strings.Repeat("x", 900) + `"}}}`)
	result := []byte(`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"` +
		strings.Repeat("y", 1024) + `"}],"isError":false}}`)
	upstream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(result)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(result)
	})
	hd := h.Handler(upstream, nil)
	run := func() {
		r, _ := http.NewRequest(http.MethodPost, "http://mcp.test/mcp", bytes.NewReader(reqBody))
		r.RequestURI, r.RemoteAddr = "/mcp", "127.0.0.1:50000"
		r.Header.Set("Authorization", "Bearer good-token")
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		w := &benchWriter{h: http.Header{}}
		hd.ServeHTTP(w, r)
		if w.code != http.StatusOK || w.n != len(result) {
			b.Fatalf("status %d, %d bytes\n%s", w.code, w.n, dumpLogs(h))
		}
	}
	run() // fills the bundle cache
	h.ResetLogs()
	b.ReportAllocs()
	for b.Loop() {
		run()
	}
}

// benchWriter is a ResponseWriter that counts what it is given.
type benchWriter struct {
	h    http.Header
	code int
	n    int
}

func (w *benchWriter) Header() http.Header { return w.h }
func (w *benchWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}
func (w *benchWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	w.n += len(b)
	return len(b), nil
}
func (w *benchWriter) Flush() {}
