package host

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// callServer is the authz cluster of the callout tests.
type callServer struct {
	*httptest.Server
	mu       sync.Mutex
	seen     []*http.Request
	bodies   []string
	gate     chan struct{}
	gateOnce sync.Once
}

func newCallServer(t testing.TB) *callServer {
	cs := &callServer{gate: make(chan struct{})}
	cs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		cs.mu.Lock()
		cs.seen = append(cs.seen, r)
		cs.bodies = append(cs.bodies, string(b))
		cs.mu.Unlock()
		switch r.URL.Path {
		case "/check":
			w.Header().Set("x-echo-from", r.Header.Get("x-from"))
			io.WriteString(w, "ok:"+string(b))
		case "/deny":
			w.WriteHeader(http.StatusForbidden)
		case "/slow":
			select {
			case <-cs.gate:
				io.WriteString(w, "late")
			case <-r.Context().Done():
			}
		}
	}))
	t.Cleanup(func() {
		cs.release()
		cs.Close()
	})
	return cs
}

func (cs *callServer) release() { cs.gateOnce.Do(func() { close(cs.gate) }) }

func (cs *callServer) clusters() map[string]Cluster {
	return map[string]Cluster{"authz": {URL: cs.URL}}
}

func TestHTTPCall_RoundTripOnRootContext(t *testing.T) {
	t.Parallel()
	srv := newCallServer(t)
	h := newHost(t, Options{Clusters: srv.clusters()})
	s := stream(t, h)
	r, err := s.SendRequestHeaders(testCtx(t), get("/", "x-test", "callout"), true)
	if err != nil || r.Reply != nil || !r.EndOfStream {
		t.Fatalf("SendRequestHeaders = %+v, %v", r, err)
	}
	// The guest set headers after proxy_set_effective_context, before continuing.
	if r.Headers.Value("x-callout-status") != "200" || r.Headers.Value("x-callout-body") != "ok:check callout" {
		t.Errorf("upstream headers = %v", r.Headers)
	}
	// The response arrived on the root context (id 1) with the first call id (4).
	waitLog(t, h, "call 4 root=1 headers=")
	// After proxy_continue_stream the request headers are gone, as in Envoy.
	waitLog(t, h, "late header status=2")
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if len(srv.seen) != 1 {
		t.Fatalf("server saw %d requests", len(srv.seen))
	}
	req := srv.seen[0]
	if req.Method != "POST" || req.URL.Path != "/check" || req.Host != "authz.local" || req.Header.Get("x-from") != "guest" {
		t.Errorf("server saw %s %s host=%s headers=%v", req.Method, req.URL.Path, req.Host, req.Header)
	}
}

func TestHTTPCall_Denied(t *testing.T) {
	t.Parallel()
	srv := newCallServer(t)
	h := newHost(t, Options{Clusters: srv.clusters()})
	r, err := stream(t, h).SendRequestHeaders(testCtx(t), get("/", "x-test", "callout", "x-call-path", "/deny"), true)
	if err != nil || r.Reply == nil || r.Reply.Status != 403 {
		t.Fatalf("SendRequestHeaders = %+v, %v; want 403 from the callback", r, err)
	}
}

func TestHTTPCall_BadArguments(t *testing.T) {
	t.Parallel()
	srv := newCallServer(t)
	h := newHost(t, Options{Clusters: srv.clusters()})
	for name, kv := range map[string][]string{
		"unknown cluster":    {"x-cluster", "nope"},
		"missing :authority": {"x-omit", ":authority"},
		"missing :path":      {"x-omit", ":path"},
		"missing :method":    {"x-omit", ":method"},
	} {
		r, err := stream(t, h).SendRequestHeaders(testCtx(t), get("/", append([]string{"x-test", "callout"}, kv...)...), true)
		if err != nil || r.Reply == nil || string(r.Reply.Body) != "http_call status 2" {
			t.Errorf("%s: %+v, %v; want BAD_ARGUMENT (2) from proxy_http_call", name, r, err)
		}
	}
}

func TestHTTPCall_Failures(t *testing.T) {
	t.Parallel()
	srv := newCallServer(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String()
	ln.Close()
	clusters := map[string]Cluster{"authz": {URL: srv.URL}, "down": {URL: refused}}
	tests := []struct {
		name  string
		mode  CallFailureMode
		kv    []string
		reply int    // the guest's reply status
		log   string // what the guest saw
	}{
		{"timeout, Envoy", CallFailureEnvoy, []string{"x-call-path", "/slow", "x-timeout", "50"}, 0, "status=504 body=upstream request timeout getstatus=0:"},
		{"timeout, reset", CallFailureReset, []string{"x-call-path", "/slow", "x-timeout", "50"}, 503, "headers=0 status= body= getstatus=11:reset"},
		{"refused, Envoy", CallFailureEnvoy, []string{"x-cluster", "down"}, 0, "status=503 body=upstream connect error or disconnect/reset before headers. reset reason: connection failure"},
		{"refused, reset", CallFailureReset, []string{"x-cluster", "down"}, 503, "headers=0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHost(t, Options{Clusters: clusters, CallFailures: tc.mode})
			r, err := stream(t, h).SendRequestHeaders(testCtx(t), get("/", append([]string{"x-test", "callout"}, tc.kv...)...), true)
			if err != nil {
				t.Fatal(err)
			}
			waitLog(t, h, tc.log)
			if tc.reply == 0 && (r.Reply != nil || r.Headers.Value("x-callout-status") == "") {
				t.Errorf("want the synthetic response passed on as headers: %+v", r)
			}
			if tc.reply != 0 && (r.Reply == nil || r.Reply.Status != tc.reply) {
				t.Errorf("want reply %d: %+v", tc.reply, r)
			}
		})
	}
}

func TestHTTPCall_WithoutEffectiveContextTheStreamStaysPaused(t *testing.T) {
	t.Parallel()
	srv := newCallServer(t)
	h := newHost(t, Options{Clusters: srv.clusters()})
	ctx := testCtx(t)
	s := stream(t, h)
	short, cancel := contextWithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err := s.SendRequestHeaders(short, get("/", "x-test", "callout-noeffective"), true)
	if err == nil || !strings.Contains(err.Error(), ErrPaused.Error()) {
		t.Fatalf("err = %v, want ErrPaused", err)
	}
	waitLog(t, h, "proxy_continue_stream on the root context has no effect")
}

func TestHTTPCall_InProcessHandlerCluster(t *testing.T) {
	t.Parallel()
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("x-handled", r.Host)
		io.WriteString(w, "inproc")
	})
	h := newHost(t, Options{Clusters: map[string]Cluster{"authz": {Handler: handler}}})
	r, err := stream(t, h).SendRequestHeaders(testCtx(t), get("/", "x-test", "callout"), true)
	if err != nil || r.Headers.Value("x-callout-body") != "inproc" {
		t.Fatalf("SendRequestHeaders = %+v, %v", r, err)
	}
}
