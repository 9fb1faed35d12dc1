package host

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestStream_PassThroughMutatesRequestAndResponse(t *testing.T) {
	t.Parallel()
	h := newHost(t, Options{})
	s := stream(t, h)
	ctx := testCtx(t)
	r, err := s.SendRequestHeaders(ctx, get("/items?q=1"), true)
	if err != nil || !r.EndOfStream || r.Reply != nil {
		t.Fatalf("request: %+v, %v", r, err)
	}
	if r.Headers.Value("x-guest") != "seen" || r.Headers.Value("x-request-id") == "" {
		t.Errorf("upstream headers = %v, want x-guest and a generated x-request-id", r.Headers)
	}
	r, err = s.SendResponseHeaders(ctx, Headers{{":status", "200"}, {"content-type", "text/plain"}}, false)
	if err != nil || r.Headers.Value("x-guest-response") != "yes" || r.EndOfStream {
		t.Fatalf("response headers: %+v, %v", r, err)
	}
	r, err = s.SendResponseBody(ctx, []byte("hi"), true)
	if err != nil || string(r.Body) != "hi" || !r.EndOfStream {
		t.Fatalf("response body: %+v, %v", r, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// proxy_on_log still sees the request headers and properties (Envoy's access-log phase).
	waitLog(t, h, "log /items?q=1 st=0 status=200 prop=/items?q=1 pst=0")
	if _, err := s.SendRequestBody(ctx, nil, true); !errors.Is(err, ErrStreamEnded) {
		t.Errorf("input after Close: %v, want ErrStreamEnded", err)
	}
}

func TestStream_LocalReplyGoesThroughResponseCallbacks(t *testing.T) {
	t.Parallel()
	h := newHost(t, Options{})
	s := stream(t, h)
	r, err := s.SendRequestHeaders(testCtx(t), get("/", "x-test", "reply"), false)
	if err != nil || r.Reply == nil {
		t.Fatalf("SendRequestHeaders = %+v, %v; want a local reply", r, err)
	}
	rep := r.Reply
	if rep.Status != 403 || string(rep.Body) != "nope" || rep.Details != "denied_by_guest" || rep.GRPCStatus != -1 {
		t.Errorf("reply = %+v", rep)
	}
	// Envoy sends local replies through the filter chain: proxy_on_response_headers ran.
	for _, want := range []string{"x-reply", "x-guest-response", "content-type", "content-length"} {
		if !rep.Headers.Has(want) {
			t.Errorf("reply headers %v lack %s", rep.Headers, want)
		}
	}
	if r.Headers != nil {
		t.Errorf("headers went upstream despite the reply: %v", r.Headers)
	}
	if _, err := s.SendRequestBody(testCtx(t), []byte("x"), true); !errors.Is(err, ErrStreamEnded) {
		t.Errorf("body after reply: %v, want ErrStreamEnded", err)
	}
}

func TestStream_LocalReplyInResponsePathReplacesResponse(t *testing.T) {
	t.Parallel()
	h := newHost(t, Options{})
	s := stream(t, h)
	ctx := testCtx(t)
	if _, err := s.SendRequestHeaders(ctx, get("/", "x-test", "resp-reply"), true); err != nil {
		t.Fatal(err)
	}
	r, err := s.SendResponseHeaders(ctx, Headers{{":status", "200"}}, false)
	if err != nil || r.Reply == nil || r.Reply.Status != 502 || string(r.Reply.Body) != "replaced" {
		t.Fatalf("SendResponseHeaders = %+v, %v; want the 502 reply", r, err)
	}
	if r.Reply.Headers.Has("x-guest-response") {
		t.Error("a reply sent while encoding went through the filter again")
	}
}

func TestStream_ResponseBodyStreamsChunkByChunk(t *testing.T) {
	t.Parallel()
	h := newHost(t, Options{})
	s := stream(t, h)
	ctx := testCtx(t)
	s.SendRequestHeaders(ctx, get("/sse", "x-test", "resp"), true)
	s.SendResponseHeaders(ctx, Headers{{":status", "200"}, {"content-type", "text/event-stream"}}, false)
	for i, chunk := range []string{"data: 1\n\n", "data: 2\n\n", "data: 3\n\n"} {
		r, err := s.SendResponseBody(ctx, []byte(chunk), i == 2)
		if err != nil || string(r.Body) != chunk || r.EndOfStream != (i == 2) {
			t.Fatalf("chunk %d: %+v, %v", i, r, err)
		}
	}
}

func TestStream_BufferedResponseIsRewrittenAtEnd(t *testing.T) {
	t.Parallel()
	h := newHost(t, Options{})
	s := stream(t, h)
	ctx := testCtx(t)
	s.SendRequestHeaders(ctx, get("/", "x-test", "resp-buffer"), true)
	s.SendResponseHeaders(ctx, Headers{{":status", "200"}}, false)
	r, err := s.SendResponseBody(ctx, []byte("abc"), false)
	if err != nil || len(r.Body) != 0 {
		t.Fatalf("first chunk released while buffering: %+v, %v", r, err)
	}
	r, err = s.SendResponseBody(ctx, []byte("def"), true)
	if err != nil || string(r.Body) != "ABCDEF" || !r.EndOfStream {
		t.Fatalf("final chunk: %+v, %v", r, err)
	}
	waitLog(t, h, "resp chunk abcdef eos=true") // the guest saw the whole buffered body
}

func TestStream_RequestBodyBufferedAndRewritten(t *testing.T) {
	t.Parallel()
	h := newHost(t, Options{})
	s := stream(t, h)
	ctx := testCtx(t)
	r, err := s.SendRequestHeaders(ctx, post("/", "x-test", "body-rewrite"), false)
	if err != nil || r.Headers == nil {
		t.Fatalf("headers: %+v, %v", r, err)
	}
	if r, _ = s.SendRequestBody(ctx, []byte("hello "), false); len(r.Body) != 0 {
		t.Fatalf("chunk released while the guest buffers: %q", r.Body)
	}
	r, err = s.SendRequestBody(ctx, []byte("world"), true)
	if err != nil || string(r.Body) != "rewritten:hell" || !r.EndOfStream {
		t.Fatalf("final chunk: %+v, %v", r, err)
	}
	// The request headers went upstream with Continue: Envoy no longer exposes them.
	waitLog(t, h, "body len=11 sha256=b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9 headers=2")
}

func TestStream_PauseOnHeadersHoldsBodyUntilContinue(t *testing.T) {
	t.Parallel()
	srv := newCallServer(t)
	for _, allow := range []bool{false, true} {
		h := newHost(t, Options{Clusters: srv.clusters(), AllowOnHeadersStopIteration: allow})
		s := stream(t, h)
		ctx := testCtx(t)
		// The guest pauses the headers for a callout. Envoy (by default) stops the whole stream:
		// the body reaches the filter only after proxy_continue_stream, and by then the
		// request headers are gone (BAD_ARGUMENT = 2). With allow_on_headers_stop_iteration the
		// body arrives while the headers are still held and readable.
		if allow {
			r, err := s.SendRequestHeaders(ctx, post("/", "x-test", "pause-headers"), false)
			if err != nil || r.Headers != nil {
				t.Fatalf("allow: headers released while paused: %+v, %v", r, err)
			}
			r, err = s.SendRequestBody(ctx, []byte("payload"), true)
			if err != nil || !r.EndOfStream || string(r.Body) != "payload" {
				t.Fatalf("allow: body: %+v, %v", r, err)
			}
			waitLog(t, h, "headers=0")
			continue
		}
		r, err := s.SendRequestHeaders(ctx, post("/", "x-test", "pause-headers"), false)
		if err != nil || r.Headers == nil {
			t.Fatalf("headers: %+v, %v", r, err)
		}
		r, err = s.SendRequestBody(ctx, []byte("payload"), true)
		if err != nil || !r.EndOfStream || string(r.Body) != "payload" {
			t.Fatalf("body: %+v, %v", r, err)
		}
		waitLog(t, h, "headers=2")
	}
}

func TestStream_BufferLimitAnswers413(t *testing.T) {
	t.Parallel()
	h := newHost(t, Options{BufferLimit: 8})
	s := stream(t, h)
	ctx := testCtx(t)
	s.SendRequestHeaders(ctx, post("/", "x-test", "body"), false)
	s.SendRequestBody(ctx, []byte("12345"), false)
	r, err := s.SendRequestBody(ctx, []byte("67890"), false)
	if err != nil || r.Reply == nil || r.Reply.Status != 413 {
		t.Fatalf("over the buffer limit: %+v, %v", r, err)
	}
}

func TestStream_HeaderMapSerde(t *testing.T) {
	t.Parallel()
	h := newHost(t, Options{})
	s := stream(t, h)
	in := get("/p", "x-test", "serde", "x-remove", "1", "x-multi", "a", "x-request-id", "rid")
	r, err := s.SendRequestHeaders(testCtx(t), in, true)
	if err != nil {
		t.Fatal(err)
	}
	e := waitLog(t, h, "pairs ")
	if !strings.Contains(e.Message, ":path=/p;") || !strings.Contains(e.Message, "x-multi=a;") {
		t.Errorf("guest read pairs %q", e.Message)
	}
	if r.Headers.Has("x-remove") || r.Headers.Value("x-added") != "1" {
		t.Errorf("upstream headers = %v", r.Headers)
	}
	if got := r.Headers.Values("x-multi"); len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Errorf("x-multi = %v, want [a b]", got)
	}
	// proxy_get_header_map_size is Envoy's byte size, not a count.
	want := Headers(r.Headers).byteSize()
	waitLog(t, h, "size "+itoa(uint64(want)))
}

func TestStream_InputOutOfOrder(t *testing.T) {
	t.Parallel()
	h := newHost(t, Options{})
	s := stream(t, h)
	ctx := testCtx(t)
	if _, err := s.SendRequestBody(ctx, []byte("x"), true); err == nil {
		t.Error("body before headers accepted")
	}
	if _, err := s.SendResponseHeaders(ctx, Headers{{":status", "200"}}, true); err == nil {
		t.Error("response before request accepted")
	}
	if _, err := s.SendRequestHeaders(ctx, get("/"), true); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SendRequestBody(ctx, []byte("x"), true); err == nil {
		t.Error("body after end of stream accepted")
	}
}

func TestStream_TrailersPassThrough(t *testing.T) {
	t.Parallel()
	h := newHost(t, Options{})
	s := stream(t, h)
	ctx := testCtx(t)
	s.SendRequestHeaders(ctx, post("/"), false)
	s.SendRequestBody(ctx, []byte("b"), false)
	r, err := s.SendRequestTrailers(ctx, Headers{{"grpc-status", "0"}})
	if err != nil || !r.EndOfStream || r.Trailers.Value("grpc-status") != "0" {
		t.Fatalf("trailers: %+v, %v", r, err)
	}
}

func TestStream_ContextDeadlineWhilePaused(t *testing.T) {
	t.Parallel()
	srv := newCallServer(t)
	h := newHost(t, Options{Clusters: srv.clusters()})
	s := stream(t, h)
	ctx, cancel := context.WithCancel(testCtx(t))
	cancel()
	_, err := s.SendRequestHeaders(ctx, get("/", "x-test", "callout", "x-call-path", "/slow"), true)
	if !errors.Is(err, ErrPaused) || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want ErrPaused wrapping context.Canceled", err)
	}
	srv.release()
	r, err := s.Wait(testCtx(t))
	if err != nil || !r.EndOfStream || !bytes.Equal([]byte(r.Headers.Value("x-callout-status")), []byte("200")) {
		t.Fatalf("Wait after the callout: %+v, %v", r, err)
	}
}

func TestStream_CloseStreamResets(t *testing.T) {
	t.Parallel()
	h := newHost(t, Options{})
	_, err := stream(t, h).SendRequestHeaders(testCtx(t), get("/", "x-test", "close"), true)
	if !errors.Is(err, ErrStreamReset) {
		t.Fatalf("err = %v, want ErrStreamReset", err)
	}
}

func TestStream_SetPropertyAndLogLevel(t *testing.T) {
	t.Parallel()
	h := newHost(t, Options{LogLevel: LogDebug})
	stream(t, h).SendRequestHeaders(testCtx(t), get("/", "x-test", "setprop"), true)
	waitLog(t, h, "setprop st=0 get=v1/0 level=1/0")
	// Lines below the proxy's level are dropped, as Envoy's logger would.
	quiet := newHost(t, Options{LogLevel: LogWarn})
	stream(t, quiet).SendRequestHeaders(testCtx(t), get("/"), true)
	if logs := quiet.GuestLogs(LogTrace); len(logs) != 0 {
		t.Errorf("info lines kept at level warn: %q", logs)
	}
}

func TestStream_SendRequestAndResponseHelpers(t *testing.T) {
	t.Parallel()
	h := newHost(t, Options{})
	s := stream(t, h)
	ctx := testCtx(t)
	r, err := s.SendRequest(ctx, post("/", "x-test", "body"), []byte("abc"))
	if err != nil || r.Headers == nil || string(r.Body) != "abc" || !r.EndOfStream || r.Paused {
		t.Fatalf("SendRequest = %+v, %v", r, err)
	}
	r, err = s.SendResponse(ctx, Headers{{":status", "200"}}, []byte("ok"))
	if err != nil || r.Headers.Value(":status") != "200" || string(r.Body) != "ok" || !r.EndOfStream {
		t.Fatalf("SendResponse = %+v, %v", r, err)
	}
	s2 := stream(t, h)
	s2.SendRequestHeaders(ctx, post("/", "x-test", "body"), false)
	if r, _ := s2.SendRequestBody(ctx, []byte("a"), false); !r.Paused {
		t.Errorf("buffering body not reported as paused: %+v", r)
	}
}

func TestStream_HostCloseReleasesWaiters(t *testing.T) {
	t.Parallel()
	srv := newCallServer(t)
	h := newHost(t, Options{Clusters: srv.clusters()})
	s := stream(t, h)
	done := make(chan error, 1)
	go func() {
		_, err := s.SendRequestHeaders(testCtx(t), get("/", "x-test", "callout", "x-call-path", "/slow"), true)
		done <- err
	}()
	waitLog(t, h, "dispatched")
	h.Close()
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Fatalf("err = %v, want ErrClosed", err)
	}
}

// With IdleWorkerFirst a new stream skips a VM that is running a callback, and streams still
// spread over every worker when none is busy.
func TestNewStream_IdleWorkerFirst(t *testing.T) {
	t.Parallel()
	h := newHost(t, Options{Workers: 2, IdleWorkerFirst: true})
	busy := h.workers[0].vm
	busy.mu.Lock() // as while a callback runs on worker 0
	for i := range 4 {
		s, err := h.NewStream(testCtx(t), StreamInfo{})
		if err != nil {
			busy.mu.Unlock()
			t.Fatal(err)
		}
		r, err := s.SendRequestHeaders(testCtx(t), post(fmt.Sprintf("/%d", i)), true)
		if err != nil || !r.EndOfStream || r.Headers.Value("x-guest") != "seen" {
			t.Errorf("stream %d: %+v, %v", i, r, err)
		}
		if s.Worker() != 1 {
			t.Errorf("stream %d started on the busy worker %d", i, s.Worker())
		}
		s.Close()
	}
	busy.mu.Unlock()
	seen := map[int]bool{}
	for range 4 {
		s, err := h.NewStream(testCtx(t), StreamInfo{})
		if err != nil {
			t.Fatal(err)
		}
		seen[s.Worker()] = true
		s.Close()
	}
	if len(seen) != 2 {
		t.Errorf("idle workers used: %v, want both", seen)
	}
}
