package filtertest

import (
	"context"
	"testing"

	"github.com/mcpmesh/gateway/filter/plugin/plugintest"
	"github.com/mcpmesh/gateway/wasmtest/host"
	"github.com/mcpmesh/gateway/wasmtest/wasmbuild"
)

// TestScenarios_Wasm runs every behaviour scenario against the real filter.wasm, in Envoy's
// default mode and with allow_on_headers_stop_iteration.
func TestScenarios_Wasm(t *testing.T) {
	m := wasmbuild.Module(t)
	for _, mode := range []struct {
		name   string
		adjust func(*host.Options)
	}{
		{"EnvoyDefault", nil},
		{"HeadersStopIteration", func(o *host.Options) { o.AllowOnHeadersStopIteration = true }},
	} {
		t.Run(mode.name, func(t *testing.T) {
			for _, s := range plugintest.Scenarios() {
				t.Run(s.Name, func(t *testing.T) {
					ctx := context.Background()
					check := &CheckServer{}
					h, err := NewHost(ctx, m, check, mode.adjust)
					if err != nil {
						t.Fatal(err)
					}
					defer h.Close()
					r, err := Run(ctx, h, check, s.Request)
					if err != nil {
						t.Fatal(err)
					}
					plugintest.Check(t, s, r)
				})
			}
		})
	}
}

// TestCache_Wasm checks the per-VM cache in the module: the second request with the same
// token makes no check call.
func TestCache_Wasm(t *testing.T) {
	ctx := context.Background()
	check := &CheckServer{}
	h, err := NewHost(ctx, wasmbuild.Module(t), check, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	var allowed plugintest.Scenario
	for _, s := range plugintest.Scenarios() {
		if s.Name == "AllowedToolIsForwardedWithAssertionAndWithoutTheExternalToken" {
			allowed = s
		}
	}
	first, err := Run(ctx, h, check, allowed.Request)
	if err != nil {
		t.Fatal(err)
	}
	second, err := Run(ctx, h, check, allowed.Request)
	if err != nil {
		t.Fatal(err)
	}
	if first.CheckCalls != 1 || second.CheckCalls != 0 || !second.Forwarded {
		t.Fatalf("check calls %d then %d (second forwarded %v); want 1 then 0", first.CheckCalls, second.CheckCalls, second.Forwarded)
	}
	if m, ok := h.Metric("mcp_gateway_cache_hit"); !ok || m.Value != 1 {
		t.Fatalf("cache hit metric = %+v, %v", m, ok)
	}
}
