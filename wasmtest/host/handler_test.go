package host

import (
	"bufio"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// upstreamEcho answers with what it received.
type upstreamEcho struct {
	calls chan *http.Request
	body  chan string
}

func newUpstream() *upstreamEcho {
	return &upstreamEcho{calls: make(chan *http.Request, 10), body: make(chan string, 10)}
}

func (u *upstreamEcho) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	u.calls <- r
	u.body <- string(b)
	w.Header().Set("x-upstream", "1")
	io.WriteString(w, "echo:"+string(b))
}

func filterServer(t *testing.T, h *Host, next http.Handler) *httptest.Server {
	srv := httptest.NewServer(h.Handler(next, nil))
	t.Cleanup(srv.Close)
	return srv
}

func TestHandler_PassThrough(t *testing.T) {
	t.Parallel()
	h := newHost(t, Options{})
	up := newUpstream()
	srv := filterServer(t, h, up)
	resp, err := http.Post(srv.URL+"/p?q=1", "text/plain", strings.NewReader("hello"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(b) != "echo:hello" || resp.Header.Get("x-guest-response") != "yes" || resp.Header.Get("x-upstream") != "1" {
		t.Fatalf("response %d %q %v", resp.StatusCode, b, resp.Header)
	}
	r := <-up.calls
	if r.Header.Get("x-guest") != "seen" || r.URL.RequestURI() != "/p?q=1" || r.Header.Get("x-request-id") == "" {
		t.Errorf("upstream saw %s %v", r.URL, r.Header)
	}
}

func TestHandler_LocalReplyNeverReachesUpstream(t *testing.T) {
	t.Parallel()
	h := newHost(t, Options{})
	up := newUpstream()
	srv := filterServer(t, h, up)
	req, _ := http.NewRequest("GET", srv.URL+"/", nil)
	req.Header.Set("x-test", "reply")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 403 || string(b) != "nope" || resp.Header.Get("x-reply") != "yes" {
		t.Fatalf("response %d %q %v", resp.StatusCode, b, resp.Header)
	}
	select {
	case r := <-up.calls:
		t.Fatalf("upstream was called: %v", r.URL)
	default:
	}
}

func TestHandler_RequestBodyRewrittenAndCallout(t *testing.T) {
	t.Parallel()
	cs := newCallServer(t)
	h := newHost(t, Options{Clusters: cs.clusters()})
	up := newUpstream()
	srv := filterServer(t, h, up)
	req, _ := http.NewRequest("POST", srv.URL+"/", strings.NewReader("hello world"))
	req.Header.Set("x-test", "body-rewrite")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := <-up.body; got != "rewritten:hell" {
		t.Errorf("upstream body = %q", got)
	}
	<-up.calls
	req, _ = http.NewRequest("GET", srv.URL+"/", nil)
	req.Header.Set("x-test", "callout")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	<-up.body
	if r := <-up.calls; r.Header.Get("x-callout-status") != "200" {
		t.Errorf("upstream headers after the callout: %v", r.Header)
	}
}

func TestHandler_EventStreamFlowsChunkByChunk(t *testing.T) {
	t.Parallel()
	h := newHost(t, Options{})
	second := make(chan struct{})
	sse := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("content-type", "text/event-stream")
		io.WriteString(w, "data: 1\n\n")
		w.(http.Flusher).Flush()
		<-second
		io.WriteString(w, "data: 2\n\n")
	})
	srv := filterServer(t, h, sse)
	req, _ := http.NewRequest("GET", srv.URL+"/events", nil)
	req.Header.Set("x-test", "resp")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rd := bufio.NewReader(resp.Body)
	line, err := rd.ReadString('\n')
	if err != nil || line != "data: 1\n" {
		t.Fatalf("first event %q, %v (before the upstream sent the second)", line, err)
	}
	close(second)
	rest, _ := io.ReadAll(rd)
	if string(rest) != "\ndata: 2\n\n" {
		t.Fatalf("rest %q", rest)
	}
}

func TestHandler_ReplyWhileUpstreamReadsBody(t *testing.T) {
	t.Parallel()
	h := newHost(t, Options{BufferLimit: 1024})
	up := newUpstream()
	srv := filterServer(t, h, up)
	req, _ := http.NewRequest("POST", srv.URL+"/", strings.NewReader(strings.Repeat("x", 64<<10)))
	req.Header.Set("x-test", "body")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 413 || string(b) != "Payload Too Large" {
		t.Fatalf("response %d %q", resp.StatusCode, b)
	}
}
