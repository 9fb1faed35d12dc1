package plugin_test

import (
	"testing"

	"github.com/mcpmesh/gateway/filter/plugin/plugintest"
)

// TestRedTeam_Native runs the red-team attacks against the filter's Go logic, in Envoy's
// default mode and with allow_on_headers_stop_iteration; wasmtest/filtertest runs them
// against filter.wasm.
func TestRedTeam_Native(t *testing.T) {
	t.Parallel()
	for _, c := range plugintest.RedTeamCases() {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
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
