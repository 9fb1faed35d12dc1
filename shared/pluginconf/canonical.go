package pluginconf

import (
	"bytes"
	"encoding/json"
	"errors"
)

// Canonical rewrites a JSON document in the one form every delivery path hands the filter:
// object keys sorted, no insignificant white space, numbers as written, and no HTML escaping.
// Istio turns a WasmPlugin's pluginConfig (a protobuf Struct) back into JSON with sorted keys,
// so the local gateway (wasmtest/gateway), the Envoy bootstrap and the Istio rendering
// (istio/render) all encode the plugin configuration through this function and give the module
// the same bytes.
func Canonical(b []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, errors.New("plugin configuration: " + err.Error())
	}
	if dec.More() {
		return nil, errors.New("plugin configuration: more than one JSON value")
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, errors.New("plugin configuration: " + err.Error())
	}
	return bytes.TrimSuffix(out.Bytes(), []byte("\n")), nil
}
