package host

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

func TestFailure_TrapFailsStreamClosedAndMarksVMFailed(t *testing.T) {
	t.Parallel()
	h := newHost(t, Options{})
	r, err := stream(t, h).SendRequestHeaders(testCtx(t), get("/", "x-test", "trap"), true)
	if err != nil || r.Reply == nil || r.Reply.Status != 503 || r.Reply.Details != "wasm_fail_stream" || len(r.Reply.Body) != 0 {
		t.Fatalf("trap: %+v, %v; want an empty 503 wasm_fail_stream", r, err)
	}
	failed, why := h.Failed(0)
	if !failed || !errors.Is(why, ErrVMFailed) || !strings.Contains(why.Error(), "proxy_on_request_headers") {
		t.Fatalf("Failed = %v, %v", failed, why)
	}
	if h.Failures() != 1 {
		t.Errorf("Failures = %d", h.Failures())
	}
	waitLog(t, h, "assignment to entry in nil map") // the Go panic message on stderr
	// Every later stream on that VM fails closed without calling the guest.
	r, err = stream(t, h).SendRequestHeaders(testCtx(t), get("/"), true)
	if err != nil || r.Reply == nil || r.Reply.Status != 503 {
		t.Fatalf("next stream: %+v, %v", r, err)
	}
}

func TestFailure_FailOpenSkipsThePlugin(t *testing.T) {
	t.Parallel()
	h := newHost(t, Options{FailStrategy: FailOpen})
	r, err := stream(t, h).SendRequestHeaders(testCtx(t), get("/", "x-test", "trap"), true)
	if err != nil || r.Reply != nil || !r.EndOfStream {
		t.Fatalf("trap with fail open: %+v, %v", r, err)
	}
	s := stream(t, h)
	r, err = s.SendRequestHeaders(testCtx(t), get("/"), true)
	if err != nil || r.Reply != nil || r.Headers.Has("x-guest") {
		t.Fatalf("next stream: %+v, %v; want it untouched", r, err)
	}
	r, err = s.SendResponseHeaders(testCtx(t), Headers{{":status", "200"}}, true)
	if err != nil || r.Headers.Has("x-guest-response") || !r.EndOfStream {
		t.Fatalf("response: %+v, %v", r, err)
	}
}

func TestFailure_FailReloadStartsANewVM(t *testing.T) {
	t.Parallel()
	h := newHost(t, Options{FailStrategy: FailReload})
	r, _ := stream(t, h).SendRequestHeaders(testCtx(t), get("/", "x-test", "exit"), true)
	if r.Reply == nil || r.Reply.Status != 503 {
		t.Fatalf("proc_exit: %+v; want 503", r)
	}
	waitLog(t, h, "wasi_unstable proc_exit")
	r, err := stream(t, h).SendRequestHeaders(testCtx(t), get("/"), true)
	if err != nil || r.Reply != nil || r.Headers.Value("x-guest") != "seen" {
		t.Fatalf("after reload: %+v, %v", r, err)
	}
	if g := h.Generation(0); g != 1 {
		t.Errorf("Generation = %d, want 1", g)
	}
	if failed, _ := h.Failed(0); failed {
		t.Error("the new VM is marked failed")
	}
}

func TestPool_StreamsSpreadOverWorkersAndShareData(t *testing.T) {
	t.Parallel()
	srv := newCallServer(t)
	h := newHost(t, Options{Workers: 3, Clusters: srv.clusters()})
	seen := map[int]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, 30)
	for i := 0; i < 30; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			s, err := h.NewStream(testCtx(t), StreamInfo{})
			if err != nil {
				errs <- err
				return
			}
			defer s.Close()
			mode := []string{"", "callout", "body"}[i%3]
			r, err := s.SendRequestHeaders(testCtx(t), post(fmt.Sprintf("/%d", i), "x-test", mode), mode != "body")
			if err == nil && mode == "body" {
				r, err = s.SendRequestBody(testCtx(t), []byte("x"), true)
			}
			if err != nil || r.Reply != nil || !r.EndOfStream {
				errs <- fmt.Errorf("stream %d (%q): %+v, %v", i, mode, r, err)
				return
			}
			mu.Lock()
			seen[s.Worker()] = true
			mu.Unlock()
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if len(seen) != 3 {
		t.Errorf("streams ran on workers %v, want all 3", seen)
	}
	m, ok := h.Metric("guest_requests")
	if !ok || m.Value != 30 {
		t.Errorf("guest_requests = %+v, want 30 across all VMs", m)
	}
}
