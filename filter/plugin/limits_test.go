package plugin_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/filter/plugin/plugintest"
)

// A bearer token the token service refused is answered 401 from the cache for a few seconds,
// without another check call; then it is asked about again.
func TestCache_RefusedTokenIsRememberedBriefly(t *testing.T) {
	t.Parallel()
	nf, err := plugintest.NewNativeFilter()
	if err != nil {
		t.Fatal(err)
	}
	bad := plugintest.WithBearer(plugintest.AllowedToolCall(), "no-such-token")
	first := nf.Run(bad)
	second := nf.Run(bad)
	if first.Status != 401 || first.CheckCalls != 1 || second.Status != 401 || second.CheckCalls != 0 {
		t.Fatalf("refused token: %d after %d calls, then %d after %d calls; want 401 after 1, then 401 after 0",
			first.Status, first.CheckCalls, second.Status, second.CheckCalls)
	}
	if second.ReplyHeaders["www-authenticate"] != first.ReplyHeaders["www-authenticate"] {
		t.Errorf("the remembered refusal answers differently: %q, want %q", second.ReplyHeaders["www-authenticate"], first.ReplyHeaders["www-authenticate"])
	}
	// A valid token is unaffected, and the refusal is forgotten after a few seconds.
	if r := nf.Run(plugintest.AllowedToolCall()); !r.Forwarded {
		t.Fatalf("valid token after a refused one: %+v", r.Status)
	}
	nf.Host.Clock = nf.Host.Clock.Add(6 * time.Second)
	if r := nf.Run(bad); r.CheckCalls != 1 || r.Status != 401 {
		t.Fatalf("after the refusal expired: %d after %d calls, want 401 after 1", r.Status, r.CheckCalls)
	}
	// A token service that cannot answer is never remembered: the next request asks again.
	down := plugintest.WithBearer(plugintest.AllowedToolCall(), plugintest.TokenServiceDown)
	if r := nf.Run(down); r.Status != 503 || r.CheckCalls != 1 {
		t.Fatalf("token service down: %d after %d calls", r.Status, r.CheckCalls)
	}
	if r := nf.Run(down); r.CheckCalls != 1 {
		t.Fatalf("a failed check was cached: %d calls", r.CheckCalls)
	}
}

// A flood of distinct tokens while the token service is slow: a VM has at most 128 check
// calls outstanding; beyond them a request is answered 503 at once, without a call, and
// once the answers come the VM calls again.
func TestChecks_InflightAreBoundedPerVM(t *testing.T) {
	t.Parallel()
	nf, err := plugintest.NewNativeFilter()
	if err != nil {
		t.Fatal(err)
	}
	var held []*plugintest.Held
	calls, shed := 0, 0
	for i := range 300 {
		h := nf.Hold(plugintest.WithBearer(plugintest.AllowedToolCall(), "garbage-"+strconv.Itoa(i)))
		calls += h.Calls()
		if h.Status() == 503 && h.Calls() == 0 {
			shed++
		}
		held = append(held, h)
	}
	if calls != 128 || shed != 300-128 {
		t.Fatalf("%d check calls and %d shed of 300 held requests, want 128 and 172", calls, shed)
	}
	if got := nf.Host.Counters["mcp_gateway_check_shed"]; got != 172 {
		t.Errorf("mcp_gateway_check_shed = %d, want 172", got)
	}
	for _, h := range held {
		h.Release()
	}
	if r := nf.Run(plugintest.AllowedToolCall()); !r.Forwarded || r.CheckCalls != 1 {
		t.Fatalf("after the answers: forwarded %v after %d calls", r.Forwarded, r.CheckCalls)
	}
}
