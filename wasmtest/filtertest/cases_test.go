package filtertest

import (
	"context"
	"testing"

	"github.com/mcpmesh/gateway/filter/plugin/plugintest"
	"github.com/mcpmesh/gateway/wasmtest/wasmbuild"
)

// TestScenarios_Wasm runs the behaviour cases that are not attacks against the real
// filter.wasm, in every Envoy mode; filter/plugin runs them natively.
func TestScenarios_Wasm(t *testing.T) {
	plugintest.RunAll(t, Wasm(wasmbuild.Module(t)), plugintest.Scenarios())
}

// TestRedTeam_Wasm runs the attacks (plugintest cases marked RedTeam) against the real
// filter.wasm, in every Envoy mode; filter/plugin runs them natively.
func TestRedTeam_Wasm(t *testing.T) {
	plugintest.RunAll(t, Wasm(wasmbuild.Module(t)), plugintest.RedTeamCases())
}

// TestScenarios_WasmLegacyEnvoy and TestRedTeam_WasmLegacyEnvoy run every case again on the
// proxy-wasm host of Envoy before cpp-host #533, where one poll_oneoff would be fatal.
func TestScenarios_WasmLegacyEnvoy(t *testing.T) {
	plugintest.RunAll(t, WasmLegacyEnvoy(wasmbuild.Module(t)), plugintest.Scenarios())
}

func TestRedTeam_WasmLegacyEnvoy(t *testing.T) {
	plugintest.RunAll(t, WasmLegacyEnvoy(wasmbuild.Module(t)), plugintest.RedTeamCases())
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
	allowed := plugintest.AllowedToolCall()
	first, err := Run(ctx, h, check, allowed)
	if err != nil {
		t.Fatal(err)
	}
	second, err := Run(ctx, h, check, allowed)
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
