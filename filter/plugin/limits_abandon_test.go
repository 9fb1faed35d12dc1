package plugin_test

import (
	"strconv"
	"testing"

	"github.com/mcpmesh/gateway/filter/plugin/plugintest"
)

// Attack: an anonymous client sends requests with made-up bearer tokens and goes away before
// the token service answers each check (or clients time out while it is slow). Every
// abandoned request must give its slot of the in-flight bound back: otherwise, after 128 of
// them, the VM answers every user's request that needs a check call 503, until it restarts.
func TestRedTeam_AbandonedChecksDoNotExhaustTheInflightBound(t *testing.T) {
	t.Parallel()
	nf, err := plugintest.NewNativeFilter()
	if err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		h := nf.Hold(plugintest.WithBearer(plugintest.AllowedToolCall(), "garbage-"+strconv.Itoa(i)))
		if h.Calls() != 1 {
			t.Fatalf("abandoned request %d made %d check calls (status %d), want 1", i, h.Calls(), h.Status())
		}
		h.Abandon()
	}
	if r := nf.Run(plugintest.AllowedToolCall()); !r.Forwarded || r.CheckCalls != 1 {
		t.Fatalf("a valid request after 300 abandoned ones: status %d, forwarded %v after %d calls", r.Status, r.Forwarded, r.CheckCalls)
	}
}
