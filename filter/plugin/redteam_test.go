package plugin_test

import (
	"testing"

	"github.com/mcpmesh/gateway/filter/plugin/plugintest"
)

// TestRedTeam_Native runs the red-team attacks against the filter's Go logic, in Envoy's
// default mode and with allow_on_headers_stop_iteration; wasmtest/filtertest runs them
// against filter.wasm. A case whose fix is pending in this package is skipped with its
// finding.
func TestRedTeam_Native(t *testing.T) {
	t.Parallel()
	for _, c := range plugintest.RedTeamCases() {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			if c.Pending != "" {
				t.Skip("redteam finding: " + c.Pending)
			}
			for _, mode := range []struct {
				name        string
				headersStop bool
			}{{"EnvoyDefault", false}, {"HeadersStopIteration", true}} {
				t.Run(mode.name, func(t *testing.T) {
					nf, err := plugintest.NewRedTeamNativeFilter()
					if err != nil {
						t.Fatal(err)
					}
					plugintest.CheckRedTeam(t, c, nf.RunRedTeam(c, mode.headersStop))
				})
			}
		})
	}
}

// TestRedTeam_NativePendingFindingsStillReproduce runs the pending cases and reports the
// ones that no longer fail, so that a fix is noticed and the case un-skipped.
func TestRedTeam_NativePendingFindingsStillReproduce(t *testing.T) {
	t.Parallel()
	for _, c := range plugintest.RedTeamCases() {
		if c.Pending == "" {
			continue
		}
		nf, err := plugintest.NewRedTeamNativeFilter()
		if err != nil {
			t.Fatal(err)
		}
		probe := &recorder{}
		plugintest.CheckRedTeam(probe, c, nf.RunRedTeam(c, false))
		nf2, _ := plugintest.NewRedTeamNativeFilter()
		plugintest.CheckRedTeam(probe, c, nf2.RunRedTeam(c, true))
		if !probe.failed {
			t.Errorf("%s: the attack no longer succeeds in either mode; drop Pending (%s)", c.Name, c.Pending)
		}
	}
}

// recorder is a testing.TB that only remembers whether a check failed.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Errorf(string, ...any) { r.failed = true }
func (r *recorder) Fatalf(string, ...any) { r.failed = true }
func (r *recorder) Logf(string, ...any)   {}
func (r *recorder) Error(...any)          { r.failed = true }
func (r *recorder) Fatal(...any)          { r.failed = true }
