package pluginconf

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzDecode_MatchesEncodingJSON: decode reads every document as encoding/json's Unmarshal
// reads it into a Config — the same fields, or an error from both.
func FuzzDecode_MatchesEncodingJSON(f *testing.F) {
	for _, s := range []string{
		`{"token_service_cluster":"ts","token_service_authority":"a","filter_key":"k","check_timeout_ms":500,"cache_ttl_s":30,` +
			`"authorize_log_fields":["user","decision"],"authorize_log_redact":[],"authorize_log_max_parameter_bytes":-1,` +
			`"routes":[{"id":"https://mcp.example.com/mcp","host":"mcp.example.com","scheme":"https","path_prefix":"/mcp","kind":"server",` +
			`"max_request_bytes":4096,"upstream_oauth2":true,"policy":[{"allow":{"and":[{"domain":{"is":"example.com"}}]}}],` +
			`"policy_shadow":{"x":[1,2.5,null,true,"\u00e9"]},"tool_pins":{"warn":true,"digests":{"echo":"sha256:00"}},"no_tool_list_filter":false}]}`,
		`null`, `[]`, `{}`, `{"routes":null}`, `{"routes":[null,{}]}`, `{"ROUTES":[],"Filter_Key":"x","filter_key":"y"}`,
		`{"check_timeout_ms":-1}`, `{"check_timeout_ms":1.5}`, `{"cache_ttl_s":1e3}`, `{"authorize_log_fields":["\ud800",null]}`,
		`{"routes":[{"tool_pins":{"digests":{"a":"1"}},"tool_pins":{"digests":{"b":"2"}}}]}`, `{"routes":[{"id":"a"}],"routes":[{"host":"b"}]}`,
		"{\"filter_key\":\"\xff\"}", `{"routes":[{"max_request_bytes":"4"}]}`, `{"k":1} x`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var want, got Config
		wantErr := json.Unmarshal(b, &want)
		gotErr := decode(b, &got)
		if (wantErr == nil) != (gotErr == nil) {
			t.Fatalf("decode(%q): error %v, encoding/json: %v", b, gotErr, wantErr)
		}
		if wantErr == nil && !reflect.DeepEqual(want, got) {
			t.Fatalf("decode(%q):\n got %#v\nwant %#v", b, got, want)
		}
	})
}
