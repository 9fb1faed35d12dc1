package policytest

import (
	"context"
	"strings"
	"testing"

	"github.com/mcpmesh/gateway/wasmtest/host"
)

// RunFiles loads the gateway configuration and the cases file, plays every case through
// module and reports each as a subtest of t named after the case, failing those whose
// outcome differs from their expectation. It is the helper for an operator's own `go test`:
//
//	func TestPolicies(t *testing.T) {
//		policytest.RunFiles(t, wasmbuild.Module(t), "gateway.yaml", "policy-cases.yaml")
//	}
func RunFiles(t *testing.T, module *host.Module, configPath, casesPath string) []Result {
	t.Helper()
	tester, err := Load(configPath, module)
	if err != nil {
		t.Fatal(err)
	}
	cases, err := LoadCases(casesPath)
	if err != nil {
		t.Fatal(err)
	}
	return RunCases(t, tester, cases)
}

// RunCases plays cases through tester and reports each as a subtest of t.
func RunCases(t *testing.T, tester *Tester, cases []Case) []Result {
	t.Helper()
	results, err := tester.Run(context.Background(), cases)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		t.Run(r.Case.Name, func(t *testing.T) {
			if !r.Passed() {
				t.Errorf("%s\nexplain:\n  %s", strings.Join(r.Problems, "\n"), strings.Join(Explain(r), "\n  "))
			}
		})
	}
	return results
}
