// Package filtertest runs the filter's behaviour scenarios (filter/plugin/plugintest) against
// the compiled filter.wasm in the wazero host, with a check API that answers as the
// scenarios' token service. The same scenarios run natively in filter/plugin.
package filtertest
