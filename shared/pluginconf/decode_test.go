package pluginconf

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/mcpmesh/gateway/shared/jsontext"
)

// decodeSeeds are plugin configurations the tests decode both ways.
var decodeSeeds = []string{
	`{"token_service_cluster":"ts","token_service_authority":"ts.internal","filter_key":"k","check_timeout_ms":2000,"cache_ttl_s":60,` +
		`"authenticate_service_url":"https://auth.example.com","authorize_log_fields":["user","mcp-method"],"authorize_log_redact":[],` +
		`"authorize_log_max_parameter_bytes":-1,"routes":[{"id":"https://mcp.example.com/","name":"docs","scheme":"https","host":"mcp.example.com",` +
		`"path_prefix":"/","kind":"server","max_request_bytes":8192,"upstream_oauth2":true,"policy":{"allow":{"and":[{"email":{"is":"a@b"}},{"claim/n":[1,2.5,true,null]}]}},` +
		`"no_tool_list_filter":false,"policy_shadow":null,"tool_pins":{"warn":true,"digests":{"search":"sha256:00"}}},{"id":"x","kind":"plain"}],"unknown":{"a":[1]}}`,
	`{"ID":1}`,
	`{"routes":[{"ID":"a","ſcheme":"https","HOST":"h","path_\u0070refix":"/"}]}`,
	`{"routes":[{"id":"a","host":"h"},{"id":"b"}],"routes":[{"id":"c"}],"routes":[{},{}]}`,
	`{"routes":[{"tool_pins":{"digests":{"a":"1"}}}],"routes":[{"tool_pins":{"digests":{"b":null}}}]}`,
	`{"check_timeout_ms":4294967296}`, `{"check_timeout_ms":-1}`, `{"check_timeout_ms":1.0}`, `{"cache_ttl_s":1e3}`,
	`{"routes":[{"policy":1e400}]}`, `{"routes":"x"}`, `{"routes":[1]}`, `{"routes":[{"tool_pins":[]}]}`,
	`{"authorize_log_fields":["a",null,2]}`, `{"filter_key":"\ud800\u0041\xff"}`, `null`, `"x"`, `[]`, `{"routes":[]}`,
	`{"authorize_log_fields":null,"routes":null}`, `{"cluster":"x","token_service_cluster":true}`,
}

func TestDecode_MatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, s := range decodeSeeds {
		compareDecode(t, []byte(s))
	}
}

func TestDecode_Errors(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{`{"routes":[{"id":5}]}`, "json: cannot unmarshal number into Go struct field Route.routes.id of type string"},
		{`{"check_timeout_ms":-1}`, "json: cannot unmarshal number -1 into Go struct field Config.check_timeout_ms of type uint32"},
		{`{"routes":[{"tool_pins":{"digests":{"a":1}}}]}`, "json: cannot unmarshal number into Go struct field ToolPins.routes.tool_pins.digests of type string"},
		{`[1]`, "json: cannot unmarshal array into Go value of type pluginconf.Config"},
		{`{"a":`, "invalid JSON"},
	}
	for _, tt := range tests {
		var c Config
		if err := decode([]byte(tt.in), &c); err == nil || err.Error() != tt.want {
			t.Errorf("decode(%s) = %v, want %s", tt.in, err, tt.want)
		}
	}
}

// FuzzDecode_MatchesEncodingJSON checks decode against json.Unmarshal, which Parse used
// before: the same Config, the same type errors word for word, an error for the same texts.
// Seeds: decodeSeeds and testdata/fuzz/FuzzDecode_MatchesEncodingJSON.
func FuzzDecode_MatchesEncodingJSON(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(compareDecode)
}

func compareDecode(t *testing.T, b []byte) {
	var want, got Config
	wantErr := json.Unmarshal(b, &want)
	err := decode(b, &got)
	if jsontext.Validate(b, jsontext.MaxDepth) == jsontext.TooDeep {
		if err == nil {
			t.Fatalf("decode(%q) accepted text nested too deep", b)
		}
		return
	}
	if (err == nil) != (wantErr == nil) {
		t.Fatalf("decode(%q) = %v, json.Unmarshal %v", b, err, wantErr)
	}
	var typeErr *json.UnmarshalTypeError
	if errors.As(wantErr, &typeErr) && err.Error() != wantErr.Error() {
		t.Fatalf("decode(%q) = %v, json.Unmarshal %v", b, err, wantErr)
	}
	if err == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("decode(%q) =\n%#v\njson.Unmarshal\n%#v", b, got, want)
	}
}
