package harness

import (
	"testing"
)

// Baseline of the MCP conformance suite 0.1.16 ("active" suite) against the Go SDK v1.8.0
// everything-server, run directly (no gateway). A gateway in front of the same server must
// reproduce exactly these numbers.
const (
	baselinePassed = 40
	baselineFailed = 0
)

func TestConformance_EverythingServerBaseline(t *testing.T) {
	t.Parallel()
	mcpURL := StartEverythingServer(t)
	res, err := RunConformanceWith(t, ConformanceOptions{URL: mcpURL})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("conformance against %s: %d passed, %d failed, %d scenarios", mcpURL, res.Passed, res.Failed, len(res.Scenarios))
	if res.Passed != baselinePassed || res.Failed != baselineFailed {
		t.Fatalf("got %d passed, %d failed (failed scenarios %v); baseline is %d passed, %d failed\n%s",
			res.Passed, res.Failed, res.FailedScenarios(), baselinePassed, baselineFailed, tail(res.Output, 8<<10))
	}
	if res.ExitCode != 0 {
		t.Errorf("suite exit code %d with no failed checks", res.ExitCode)
	}
	if len(res.Scenarios) < 30 {
		t.Errorf("summary lists %d scenarios, want at least 30", len(res.Scenarios))
	}
}
