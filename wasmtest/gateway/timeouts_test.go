package gateway_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/wasmtest/gateway"
)

// slowBodyBound is the body bound the timeout tests configure.
const slowBodyBound = 300 * time.Millisecond

// Attack: slow loris on the body. The client sends a token request's headers at once, then
// one body byte at a time, slowly and forever. Only the header read was bounded, and the
// in-process token service does not have the read timeout of its own listener, so the
// request stayed open as long as the client liked: enough of them exhaust the gateway. The
// body must arrive within the bound; the connection is cut soon after it passes.
func TestRedTeam_SlowBodyToTheTokenServiceIsCutOff(t *testing.T) {
	t.Parallel()
	mcpURL, authURL, _ := startGateway(t, "http://127.0.0.1:1/mcp", func(o *gateway.Options) {
		o.Timeouts = gateway.Timeouts{TokenServiceBody: slowBodyBound}
	})
	mcp, _ := url.Parse(mcpURL)
	auth, _ := url.Parse(authURL)
	for name, tc := range map[string]struct{ host, path string }{
		"token endpoint on a route host":      {mcp.Host, "/.gateway/mcp/token"},
		"registration on a route host":        {mcp.Host, "/.gateway/mcp/register"},
		"provider callback on the authn host": {auth.Host, "/oauth2/callback"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			elapsed, cut := slowLoris(t, tc.host, tc.path, 3*time.Second)
			if !cut {
				t.Fatalf("the request was still open after %v of a slow body (bound %v)", elapsed, slowBodyBound)
			}
			if elapsed > slowBodyBound+1500*time.Millisecond {
				t.Fatalf("the request was cut after %v, want about %v", elapsed, slowBodyBound)
			}
		})
	}
}

// slowLoris sends a POST's headers to addr, then one body byte every 50 ms, for at most
// giveUp. It reports how long the gateway kept the request open and whether it ended it
// (answered or closed the connection) before giveUp.
func slowLoris(t *testing.T, addr, path string, giveUp time.Duration) (time.Duration, bool) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100000\r\n\r\n", path, addr)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if _, err := c.Write([]byte("a")); err != nil {
					return
				}
			}
		}
	}()
	c.SetReadDeadline(start.Add(giveUp))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		if err == nil {
			// Answered: the connection must not stay open for the rest of the body.
			_, err = c.Read(make([]byte, 1))
		}
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return time.Since(start), false
	}
	return time.Since(start), true
}

// The body bound ends with the body: an event stream answering a POST (MCP streamable HTTP)
// or a GET flows for longer than the bound.
func TestGateway_BodyBoundDoesNotCutEventStreams(t *testing.T) {
	t.Parallel()
	const events = 8
	upstream := newSSEUpstream(t, events, 100*time.Millisecond) // 800 ms, well past the bound
	mcpURL, _, ts := startGateway(t, upstream, func(o *gateway.Options) {
		o.Timeouts = gateway.Timeouts{TokenServiceBody: slowBodyBound, UpstreamBody: slowBodyBound}
	})
	token := seedToken(t, ts.Store())
	for _, method := range []string{http.MethodPost, http.MethodGet} {
		t.Run(method, func(t *testing.T) {
			t.Parallel()
			var body io.Reader
			if method == http.MethodPost {
				body = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`)
			}
			req, _ := http.NewRequest(method, mcpURL, body)
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Accept", "application/json, text/event-stream")
			if body != nil {
				req.Header.Set("Content-Type", "application/json")
			}
			resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b, _ := io.ReadAll(resp.Body)
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			b, err := io.ReadAll(resp.Body)
			if n := strings.Count(string(b), "data: "); err != nil || n != events {
				t.Fatalf("got %d of %d events (err %v): the stream was cut", n, events, err)
			}
		})
	}
}

// newSSEUpstream answers every request, after reading its body, with n events spaced by
// every.
func newSSEUpstream(t *testing.T, n int, every time.Duration) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for i := range n {
			fmt.Fprintf(w, "data: {\"i\":%d}\n\n", i)
			w.(http.Flusher).Flush()
			time.Sleep(every)
		}
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return "http://" + l.Addr().String() + "/mcp"
}
