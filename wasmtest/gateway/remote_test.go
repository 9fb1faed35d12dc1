package gateway

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

func deadURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := "http://" + l.Addr().String()
	l.Close()
	return u
}

// A request goes to the replicas in turn; a refused connection moves it, body and all, to the
// next replica; a replica that took the request and failed is never retried elsewhere; when
// none can be reached the answer is 503.
func TestRemoteTokenService_RetriesOnlyConnectFailures(t *testing.T) {
	t.Parallel()
	var got atomic.Int64
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Add(1)
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Connection", "close")
		_, _ = io.WriteString(w, "body="+string(b))
	}))
	t.Cleanup(ok.Close)
	var broken atomic.Int64
	reset := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		broken.Add(1)
		hj, _ := w.(http.Hijacker)
		c, _, _ := hj.Hijack()
		c.Close() // took the request, then died: the request may have had effects
	}))
	t.Cleanup(reset.Close)

	ts, err := RemoteTokenService([]string{deadURL(t), ok.URL}, []string{ok.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 4 {
		rec := httptest.NewRecorder()
		ts.Public.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "http://mcp.example/.gateway/mcp/token", strings.NewReader("grant=x")))
		if rec.Code != http.StatusOK || rec.Body.String() != "body=grant=x" {
			t.Fatalf("with one replica down: %d %q", rec.Code, rec.Body)
		}
	}
	if got.Load() != 4 {
		t.Fatalf("live replica served %d of 4", got.Load())
	}

	ts, _ = RemoteTokenService([]string{reset.URL, ok.URL}, []string{ok.URL}, nil)
	before := got.Load()
	for range 4 {
		rec := httptest.NewRecorder()
		ts.Public.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "http://mcp.example/.gateway/mcp/token", strings.NewReader("grant=x")))
		if rec.Code != http.StatusOK && rec.Code != http.StatusServiceUnavailable {
			t.Fatalf("status %d", rec.Code)
		}
	}
	if broken.Load() != 2 || got.Load()-before != 2 {
		t.Fatalf("reset replica took %d, live %d of 4: a request that reached a replica was resent", broken.Load(), got.Load()-before)
	}

	ts, _ = RemoteTokenService([]string{deadURL(t), deadURL(t)}, []string{deadURL(t)}, nil)
	rec := httptest.NewRecorder()
	ts.Internal.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "http://gateway-tokensvc/.internal/check", strings.NewReader("{}")))
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("every replica down: %d, want 503", rec.Code)
	}
}
