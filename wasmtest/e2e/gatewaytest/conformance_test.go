package gatewaytest

import (
	"maps"
	"testing"

	"github.com/mcpmesh/gateway/wasmtest/e2e/harness"
)

// TestConformance_ThroughGatewayMatchesDirect runs the MCP conformance suite's server scenarios
// against the everything-server directly and through the gateway (with an External Token
// obtained by signing in at the real OpenID provider): every scenario must come out the same.
func TestConformance_ThroughGatewayMatchesDirect(t *testing.T) {
	s := startStack(t)
	c := signIn(t, s, s.OpenURL)

	direct, err := harness.RunConformanceWith(t, harness.ConformanceOptions{URL: s.Everything})
	if err != nil {
		t.Fatal(err)
	}
	through, err := harness.RunConformanceWith(t, harness.ConformanceOptions{URL: s.OpenURL, Token: c.Token.AccessToken})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("direct: %d passed, %d failed; through the gateway: %d passed, %d failed",
		direct.Passed, direct.Failed, through.Passed, through.Failed)
	if direct.Passed == 0 || len(direct.Scenarios) < 30 {
		t.Fatalf("direct run looks empty: %d passed, %d scenarios", direct.Passed, len(direct.Scenarios))
	}
	if through.Passed != direct.Passed || through.Failed != direct.Failed || !maps.Equal(through.Scenarios, direct.Scenarios) {
		t.Fatalf("through the gateway %d passed, %d failed (failed scenarios %v); directly %d passed, %d failed (%v)\n%s",
			through.Passed, through.Failed, through.FailedScenarios(), direct.Passed, direct.Failed, direct.FailedScenarios(), through.Output)
	}
}
