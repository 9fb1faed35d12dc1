package authlog

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpmesh/gateway/shared/ascii"
	"github.com/tidwall/gjson"
)

// params writes raw as mcp-tool-parameters with o and returns the value as written.
func params(t testing.TB, o Options, raw string, validated bool) string {
	t.Helper()
	line := NewWriterOptions([]Field{FieldMCPToolParameters}, o).Append(nil, &Record{MCPToolParameters: raw, MCPToolParametersValidated: validated})
	if !json.Valid(line) {
		t.Fatalf("record is not JSON: %s", line)
	}
	return gjson.GetBytes(line, "mcp-tool-parameters").Raw
}

func TestWriter_RedactsToolParameters(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		redact []string
		raw    string
		want   string
	}{
		{"default keys at the top", nil, `{"user":"al","password":"hunter2","api_key":"k"}`, `{"user":"al","password":"[redacted]","api_key":"[redacted]"}`},
		{"case-insensitive", nil, `{"Password":"a","TOKEN":1,"Authorization":"Bearer x"}`, `{"Password":"[redacted]","TOKEN":"[redacted]","Authorization":"[redacted]"}`},
		{"at any depth and in arrays", nil, `{"a":{"b":[{"secret":"s"},{"x":{"cookie":"c"}}]}}`, `{"a":{"b":[{"secret":"[redacted]"},{"x":{"cookie":"[redacted]"}}]}}`},
		{"whole object and array values", nil, `{"token":{"a":[1,{"b":"}"}]},"n":1,"secret":[1,2],"k":true}`, `{"token":"[redacted]","n":1,"secret":"[redacted]","k":true}`},
		{"numbers, literals, whitespace", nil, "{ \"token\" : 12.5e3 , \"secret\" :null,\"x\":false }", `{"token":"[redacted]","secret":"[redacted]","x":false}`},
		{"escaped key", nil, `{"p\u0061ssword":"x"}`, `{"p\u0061ssword":"[redacted]"}`},
		{"a string value is not a key", nil, `{"note":"password","list":["token"]}`, `{"note":"password","list":["token"]}`},
		{"only exact keys", nil, `{"passwords":"x","my_token":"y"}`, `{"passwords":"x","my_token":"y"}`},
		{"custom list replaces the default", []string{"ssn"}, `{"password":"p","SSN":"123"}`, `{"password":"p","SSN":"[redacted]"}`},
		{"empty list redacts nothing", []string{}, `{"password":"p"}`, `{"password":"p"}`},
		{"path from the root", []string{"$.credentials.key"}, `{"key":1,"credentials":{"key":"k","other":{"key":2}},"x":{"credentials":{"key":3}}}`, `{"key":1,"credentials":{"key":"[redacted]","other":{"key":2}},"x":{"credentials":{"key":3}}}`},
		{"path after a sibling", []string{"$.a.b"}, `{"a":{"c":{"b":1},"b":2},"z":{"b":3}}`, `{"a":{"c":{"b":1},"b":"[redacted]"},"z":{"b":3}}`},
		{"path does not cross arrays", []string{"$.a.b"}, `{"a":[{"b":1}]}`, `{"a":[{"b":1}]}`},
		{"path of one segment", []string{"$.Q"}, `{"q":"x","r":{"q":"y"}}`, `{"q":"[redacted]","r":{"q":"y"}}`},
	}
	for _, tt := range tests {
		for _, validated := range []bool{false, true} {
			if got := params(t, Options{Redact: tt.redact}, tt.raw, validated); got != tt.want {
				t.Errorf("%s (validated %v): %s\ngot  %s\nwant %s", tt.name, validated, tt.raw, got, tt.want)
			}
		}
	}
}

func TestWriter_TruncatesLargeToolParameters(t *testing.T) {
	t.Parallel()
	big := `{"text":"` + strings.Repeat("x", 5000) + `"}`
	tests := []struct {
		name string
		max  int
		raw  string
		want string
	}{
		{"default bound", 0, big, `{"[truncated]":true,"bytes":5011}`},
		{"under the bound", 0, `{"a":1}`, `{"a":1}`},
		{"bound counts the compacted text", 13, "{ \"a\" : 1 ,  \"b\" : 2 }", `{"a":1,"b":2}`},
		{"just over", 13, `{"a":1,"bc":2}`, `{"[truncated]":true,"bytes":14}`},
		{"negative: no bound", -1, big, big},
		{"invalid stays null", 1, `{"a":`, `null`},
	}
	for _, tt := range tests {
		if got := params(t, Options{MaxParameterBytes: tt.max}, tt.raw, false); got != tt.want {
			t.Errorf("%s: got %.80s, want %.80s", tt.name, got, tt.want)
		}
	}
}

func TestParseRedact(t *testing.T) {
	t.Parallel()
	for _, ok := range [][]string{nil, {}, DefaultRedact(), {"$.a", "$.a.b.c", "x.y"}} {
		if err := ParseRedact(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, tt := range []struct {
		list []string
		msg  string
	}{
		{[]string{"a", ""}, `authorize_log_redact[1]: invalid redaction entry ""`},
		{[]string{"$"}, `authorize_log_redact[0]`},
		{[]string{"$a"}, `authorize_log_redact[0]`},
		{[]string{"$.a..b"}, `authorize_log_redact[0]`},
		{[]string{"ok", "$.a."}, `authorize_log_redact[1]`},
	} {
		if err := ParseRedact(tt.list); err == nil || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("%q: %v, want %q", tt.list, err, tt.msg)
		}
	}
}

func TestWriter_RedactingAllocatesNothing(t *testing.T) {
	w := NewWriterOptions(SelectableFields(), Options{Redact: []string{"password", "$.a.b"}})
	r := blockedTool()
	r.MCPToolParameters = `{"password":"p","a":{"b":{"c":1}},"x":[{"password":2}]}`
	buf := w.Append(nil, r)
	if allocs := testing.AllocsPerRun(100, func() { buf = w.Append(buf[:0], r) }); allocs != 0 {
		t.Errorf("%v allocations per record", allocs)
	}
}

// FuzzRedact: whatever the arguments, a valid object stays valid JSON, one line, with every
// member named by a redacted key (at any depth) written as "[redacted]" and nothing else
// changed; with the promise of validity the line stays one line whatever the text holds.
func FuzzRedact(f *testing.F) {
	f.Fuzz(func(t *testing.T, raw, key string) {
		if key == "" || strings.HasPrefix(key, "$") {
			key = "password"
		}
		o := Options{Redact: []string{key}, MaxParameterBytes: -1}
		w := NewWriterOptions([]Field{FieldMCPToolParameters}, o)
		line := w.Append(nil, &Record{MCPToolParameters: raw})
		if !json.Valid(line) || bytes.ContainsAny(line, "\n\r") {
			t.Fatalf("%q: record %s", raw, line)
		}
		got := gjson.GetBytes(line, "mcp-tool-parameters")
		if !gjson.Valid(raw) || !strings.HasPrefix(strings.TrimLeft(raw, " \t\r\n"), "{") {
			if got.Raw != "null" {
				t.Fatalf("%q: invalid arguments written as %s", raw, got.Raw)
			}
		} else {
			var in, out any
			if err := json.Unmarshal([]byte(raw), &in); err != nil {
				return // encoding/json is stricter (invalid UTF-8 is kept by gjson's check)
			}
			if err := json.Unmarshal([]byte(got.Raw), &out); err != nil {
				t.Fatalf("%q: written %s: %v", raw, got.Raw, err)
			}
			if want := redactValue(in, key); !jsonEqual(want, out) {
				t.Fatalf("%q (key %q): written %s", raw, key, got.Raw)
			}
		}
		trusted := w.Append(nil, &Record{MCPToolParameters: raw, MCPToolParametersValidated: true})
		if bytes.ContainsAny(trusted, "\n\r\u2028\u2029") || bytes.ContainsFunc(trusted, func(r rune) bool { return r < 0x20 || r >= 0x80 && r <= 0x9f }) {
			t.Fatalf("%q broke the line: %q", raw, trusted)
		}
	})
}

// redactValue is the reference redaction: every member named key (ASCII case-insensitively)
// at any depth becomes "[redacted]".
func redactValue(v any, key string) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			if ascii.EqualFold(k, strings.ToLower(key)) && isASCII(key) {
				out[k] = "[redacted]"
			} else {
				out[k] = redactValue(e, key)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = redactValue(e, key)
		}
		return out
	}
	return v
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}
