package harness

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
)

// Baseline of the MCP conformance suite 0.1.16 ("active" suite) against the Go SDK v1.8.0
// everything-server, run directly (no gateway). A gateway in front of the same server must
// reproduce exactly these numbers.
const (
	baselinePassed = 40
	baselineFailed = 0
)

func TestConformance_EverythingServerBaseline(t *testing.T) {
	t.Parallel()
	mcpURL := StartEverythingServer(t)
	res, err := RunConformanceWith(t, ConformanceOptions{URL: mcpURL})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("conformance against %s: %d passed, %d failed, %d scenarios", mcpURL, res.Passed, res.Failed, len(res.Scenarios))
	if res.Passed != baselinePassed || res.Failed != baselineFailed {
		t.Fatalf("got %d passed, %d failed (failed scenarios %v); baseline is %d passed, %d failed\n%s",
			res.Passed, res.Failed, res.FailedScenarios(), baselinePassed, baselineFailed, tail(res.Output, 8<<10))
	}
	if res.ExitCode != 0 {
		t.Errorf("suite exit code %d with no failed checks", res.ExitCode)
	}
	if len(res.Scenarios) < 30 {
		t.Errorf("summary lists %d scenarios, want at least 30", len(res.Scenarios))
	}
}

// TestConformance_PreloadSendsTokenOnEveryRequest runs the suite through a proxy that refuses
// any request without the bearer token: the totals must equal the baseline and the proxy must
// have refused nothing, so auth-preload.mjs reaches every request the suite makes (POSTs,
// SSE GETs, DELETEs).
func TestConformance_PreloadSendsTokenOnEveryRequest(t *testing.T) {
	t.Parallel()
	upstream, err := url.Parse(StartEverythingServer(t))
	if err != nil {
		t.Fatal(err)
	}
	token := rand.Text()
	var mu sync.Mutex
	var passed, refused int
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(&url.URL{Scheme: upstream.Scheme, Host: upstream.Host})
			r.Out.URL.Path = r.In.URL.Path
			// Keep the client's Host so the server's DNS-rebinding check still sees it.
			r.Out.Host = r.In.Host
			r.Out.Header.Del("Authorization")
		},
		FlushInterval: -1,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ok := r.Header.Get("Authorization") == "Bearer "+token
		mu.Lock()
		if ok {
			passed++
		} else {
			refused++
		}
		mu.Unlock()
		if !ok {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		if err := bufferBody(r); err != nil {
			http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)

	p, f, out := RunConformance(t, srv.URL+"/mcp", token)
	mu.Lock()
	defer mu.Unlock()
	t.Logf("through the token-checking proxy: %d passed, %d failed; proxy passed %d requests, refused %d", p, f, passed, refused)
	if p != baselinePassed || f != baselineFailed {
		t.Errorf("got %d passed, %d failed; baseline is %d passed, %d failed\n%s", p, f, baselinePassed, baselineFailed, tail(out, 8<<10))
	}
	if refused != 0 || passed == 0 {
		t.Errorf("proxy refused %d requests without the token and passed %d", refused, passed)
	}
}

// bufferBody reads the request body into memory before it is proxied, as the gateway does to
// inspect JSON-RPC. A plain httputil.ReverseProxy that streams request bodies makes the suite's
// scenarios with server-to-client requests (sampling, elicitation, logging) hang for their 60 s
// timeout about once in five runs (seen with Go 1.26 and the v1.8.0 everything-server; 0 in 62
// runs once bodies are buffered), so a proxy under test must buffer them.
func bufferBody(r *http.Request) error {
	if r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, 1<<20+1))
	if err != nil {
		return err
	}
	if len(b) > 1<<20 {
		return errors.New("request body over 1 MiB")
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	r.ContentLength = int64(len(b))
	return nil
}
