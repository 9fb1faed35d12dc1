package filtertest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/filter/plugin/plugintest"
	"github.com/mcpmesh/gateway/wasmtest/host"
	"github.com/mcpmesh/gateway/wasmtest/wasmbuild"
)

func newHost(ctx context.Context, t *testing.T, check *CheckServer, adjust func(*host.Options)) *host.Host {
	t.Helper()
	h, err := NewHost(ctx, wasmbuild.Module(t), check, adjust)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// TestRedTeam_WasmSlowTokenServiceFailsClosed: a token service that answers after
// check_timeout_ms gets the request refused with 503 within about that time, never
// forwarded; the late answer is not cached for the next request either.
func TestRedTeam_WasmSlowTokenServiceFailsClosed(t *testing.T) {
	ctx := context.Background()
	check := &CheckServer{}
	check.delay.Store(int64(1500 * time.Millisecond))
	h := newHost(ctx, t, check, nil)
	req := plugintest.Request{Method: "POST", Authority: "mcp.example.com", Path: "/mcp",
		Headers: [][2]string{{"content-type", "application/json"}, {"authorization", "Bearer " + plugintest.TokenAlice}},
		Chunks:  []string{`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`}}
	start := time.Now()
	r, err := Run(ctx, h, check, req)
	if err != nil {
		t.Fatal(err)
	}
	if elapsed := time.Since(start); r.Status != 503 || r.Forwarded || elapsed > 1400*time.Millisecond {
		t.Fatalf("status %d forwarded %v after %v; want 503 within the 500 ms check timeout", r.Status, r.Forwarded, elapsed)
	}
	time.Sleep(1200 * time.Millisecond) // the late answer arrives (and must be dropped)
	check.delay.Store(0)
	r, err = Run(ctx, h, check, req)
	if err != nil {
		t.Fatal(err)
	}
	if r.CheckCalls != 1 || !r.Forwarded {
		t.Fatalf("after the slow answer: calls %d forwarded %v; want a fresh check and the request forwarded", r.CheckCalls, r.Forwarded)
	}
}

// TestRedTeam_WasmConcurrentCallsKeepTheirOwnDecision: concurrent streams that each wait for the
// token service neither leak into each other's decisions nor hang the VM.
func TestRedTeam_WasmConcurrentCallsKeepTheirOwnDecision(t *testing.T) {
	ctx := context.Background()
	check := &CheckServer{}
	check.delay.Store(int64(50 * time.Millisecond))
	h := newHost(ctx, t, check, func(o *host.Options) { o.Workers = 1 })
	deny := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"delete_everything"}}`
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	type out struct {
		who string
		r   plugintest.Result
		err error
	}
	results := make(chan out, 40)
	for i := 0; i < 20; i++ {
		for _, who := range []string{plugintest.TokenAlice, plugintest.TokenBob} {
			body := list
			if i%2 == 0 {
				body = deny
			}
			go func() {
				req := plugintest.Request{Method: "POST", Authority: "mcp.example.com", Path: "/mcp",
					Headers: [][2]string{{"content-type", "application/json"}, {"authorization", "Bearer " + who}}, Chunks: []string{body}}
				r, err := Run(ctx, h, check, req)
				if body == deny {
					who += "/deny"
				}
				results <- out{who, r, err}
			}()
		}
	}
	for i := 0; i < 40; i++ {
		o := <-results
		if o.err != nil || o.r.Stuck {
			t.Fatalf("%s: err %v stuck %v", o.who, o.err, o.r.Stuck)
		}
		// alice may list tools but not delete; bob (another domain) may do nothing.
		wantForwarded := o.who == plugintest.TokenAlice
		// A denied tool call is answered locally with an isError result (200), a denied
		// tools/list with 403.
		wantStatus := 403
		if strings.HasSuffix(o.who, "/deny") {
			wantStatus = 200
		}
		if o.r.Forwarded != wantForwarded || (!wantForwarded && o.r.Status != wantStatus) {
			t.Errorf("%s: forwarded %v status %d", o.who, o.r.Forwarded, o.r.Status)
		}
		if o.r.Forwarded && !strings.HasPrefix(o.r.Upstream["x-gateway-assertion"], plugintest.AssertionForPrefix) {
			t.Errorf("%s: assertion %q", o.who, o.r.Upstream["x-gateway-assertion"])
		}
	}
}
