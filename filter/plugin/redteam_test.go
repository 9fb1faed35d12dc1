package plugin_test

import (
	"testing"

	"github.com/mcpmesh/gateway/filter/plugin/plugintest"
)

// TestRedTeam_Native runs the attacks (plugintest cases marked RedTeam) against the filter's
// Go logic, in every Envoy mode; wasmtest/filtertest runs them against filter.wasm.
func TestRedTeam_Native(t *testing.T) {
	t.Parallel()
	plugintest.RunAll(t, plugintest.Native, plugintest.RedTeamCases())
}
