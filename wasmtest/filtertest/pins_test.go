package filtertest

import (
	"context"
	"strings"
	"testing"

	"github.com/mcpmesh/gateway/filter/plugin/plugintest"
	"github.com/mcpmesh/gateway/wasmtest/host"
	"github.com/mcpmesh/gateway/wasmtest/wasmbuild"
)

// A pinned tool seen changed on one VM (one Envoy worker) is refused on the others: the VM
// marks it in the proxy's shared data (docs/tool-pinning.md).
func TestPinnedToolSeenChangedOnOneWorkerIsRefusedOnAnother(t *testing.T) {
	m := wasmbuild.Module(t)
	ctx := context.Background()
	check := &CheckServer{}
	h, err := NewHost(ctx, m, check, func(o *host.Options) { o.Workers = 2 })
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	list, call := plugintest.PinnedChange()
	// Before the list, echo is trusted on worker 1.
	r, err := sendOn(ctx, h, check, call, host.StreamInfo{Worker: 1, UseWorker: true})
	if err != nil || !r.Forwarded {
		t.Fatalf("echo before any list: forwarded %v, status %d, err %v", r.Forwarded, r.Status, err)
	}
	r, err = sendOn(ctx, h, check, list, host.StreamInfo{Worker: 0, UseWorker: true})
	if err != nil || strings.Contains(r.ClientBody, `"echo"`) {
		t.Fatalf("list on worker 0: %v, body %s", err, r.ClientBody)
	}
	r, err = sendOn(ctx, h, check, call, host.StreamInfo{Worker: 1, UseWorker: true})
	if err != nil || r.Status != 200 || !strings.Contains(r.Body, "mcp-tool-definition-changed") {
		t.Fatalf("echo on worker 1 after the list on worker 0: status %d, body %s, err %v", r.Status, r.Body, err)
	}
	if v, _, ok := h.SharedData("mcp-gateway/tool-changed/https://pinned.example.com/mcp\x00echo"); !ok || string(v) != "\x01" {
		t.Errorf("shared data mark %q (%v)", v, ok)
	}
}
