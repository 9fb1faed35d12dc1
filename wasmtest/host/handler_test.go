package host

import (
	"bufio"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
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

// A response's first part reaches the client before the upstream sends the rest: at once for
// an event stream or a body of unknown length, when the upstream flushes for a body of known
// length (as httputil.ReverseProxy does after each write of a stream).
func TestHandler_StreamsFlowChunkByChunk(t *testing.T) {
	t.Parallel()
	h := newHost(t, Options{})
	cases := []struct {
		name          string
		header        map[string]string
		first, second string
		flush         bool
	}{
		{"EventStream", map[string]string{"content-type": "text/event-stream"}, "data: 1\n\n", "data: 2\n\n", false},
		{"EventStreamFlushed", map[string]string{"content-type": "text/event-stream"}, "data: 1\n\n", "data: 2\n\n", true},
		{"UnknownLength", map[string]string{"content-type": "application/octet-stream"}, "part 1\n", "part 2\n", false},
		{"KnownLengthFlushed", map[string]string{"content-type": "application/json", "content-length": "14"}, "part 1\n", "part 2\n", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			second := make(chan struct{})
			up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tc.header {
					w.Header().Set(k, v)
				}
				io.WriteString(w, tc.first)
				if tc.flush {
					w.(http.Flusher).Flush()
				}
				<-second
				io.WriteString(w, tc.second)
			})
			srv := filterServer(t, h, up)
			req, _ := http.NewRequest("GET", srv.URL+"/events", nil)
			req.Header.Set("x-test", "resp")
			resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
			if err != nil {
				close(second)
				t.Fatal(err)
			}
			defer resp.Body.Close()
			rd := bufio.NewReader(resp.Body)
			line, err := rd.ReadString('\n')
			if err != nil || line != strings.SplitAfter(tc.first, "\n")[0] {
				close(second)
				t.Fatalf("first part %q, %v (before the upstream sent the second)", line, err)
			}
			close(second)
			rest, _ := io.ReadAll(rd)
			if line+string(rest) != tc.first+tc.second {
				t.Fatalf("response %q", line+string(rest))
			}
		})
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

// A response of known length reaches the client whole and with its status, whether the
// filter passes it on or holds it and rewrites it; one that the filter released whole at its
// end is sent with its length.
func TestHandler_KnownLengthResponses(t *testing.T) {
	t.Parallel()
	h := newHost(t, Options{})
	cases := []struct {
		name, mode string
		status     int
		body       string
		want       string
	}{
		{"PassedOn", "", 200, "hello world", "hello world"},
		{"HeldAndRewritten", "resp-buffer", 200, "hello world", "HELLO WORLD"},
		{"Empty404", "", 404, "", ""},
		{"EmptyHeld", "resp-buffer", 200, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("content-length", strconv.Itoa(len(tc.body)))
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			})
			srv := filterServer(t, h, up)
			req, _ := http.NewRequest("GET", srv.URL+"/", nil)
			req.Header.Set("x-test", tc.mode)
			resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != tc.status || string(b) != tc.want || resp.ContentLength != int64(len(tc.want)) ||
				resp.Header.Get("x-guest-response") != "yes" {
				t.Fatalf("%d %q (length %d) %v, %v", resp.StatusCode, b, resp.ContentLength, resp.Header, err)
			}
		})
	}
}

// The write that completes a body of known length reaches the filter with the end of the
// stream (as Envoy's codec gives it), and bytes past that length are refused.
func TestHandler_LastChunkOfKnownLengthEndsTheStream(t *testing.T) {
	t.Parallel()
	h := newHost(t, Options{})
	excess := make(chan error, 1)
	up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("content-length", "11")
		io.WriteString(w, "hello ")
		io.WriteString(w, "world")
		_, err := io.WriteString(w, "!")
		excess <- err
	})
	srv := filterServer(t, h, up)
	req, _ := http.NewRequest("GET", srv.URL+"/last", nil)
	req.Header.Set("x-test", "resp")
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "hello world" {
		t.Fatalf("body %q", b)
	}
	if err := <-excess; !errors.Is(err, http.ErrContentLength) {
		t.Errorf("a write past the length: %v, want http.ErrContentLength", err)
	}
	var chunks []string
	for _, l := range h.GuestLogs(LogInfo) {
		if strings.HasPrefix(l, "resp chunk ") {
			chunks = append(chunks, l)
		}
	}
	want := []string{"resp chunk hello  eos=false", "resp chunk world eos=true"}
	if strings.Join(chunks, "|") != strings.Join(want, "|") {
		t.Errorf("the filter saw %q, want %q", chunks, want)
	}
}
