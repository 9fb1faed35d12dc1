package authlog

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/shared/policy"
	"github.com/tidwall/gjson"
)

func TestParseFields(t *testing.T) {
	t.Parallel()
	got, err := ParseFields([]string{"mcp-tool", "request-id", "allow"})
	if err != nil || !slices.Equal(got, []Field{FieldMCPTool, FieldRequestID, FieldAllow}) {
		t.Fatalf("ParseFields = %v, %v", got, err)
	}
	if got, err := ParseFields(nil); err != nil || len(got) != 0 {
		t.Fatalf("ParseFields(nil) = %v, %v", got, err)
	}
	all := make([]string, 0, 11)
	for _, f := range SelectableFields() {
		all = append(all, string(f))
	}
	want := []string{"request-id", "user", "email", "allow", "allow-why-true", "allow-why-false", "deny", "deny-why-false", "mcp-method", "mcp-tool", "mcp-tool-parameters", "client-id", "mcp-protocol-version", "mcp-client-name", "mcp-client-version"}
	if !slices.Equal(all, want) {
		t.Fatalf("SelectableFields = %q", all)
	}
	if _, err := ParseFields(all); err != nil {
		t.Fatalf("every selectable field: %v", err)
	}
	tests := []struct {
		names []string
		kind  error
		msg   string
	}{
		{[]string{"user", "mcp_tool"}, ErrUnknownField, `authorize_log_fields[1]: unknown authorization log field "mcp_tool"`},
		{[]string{"User"}, ErrUnknownField, `authorize_log_fields[0]: unknown authorization log field "User"`},
		{[]string{""}, ErrUnknownField, `authorize_log_fields[0]: unknown authorization log field ""`},
		{[]string{"deny-why-true"}, ErrUnknownField, `"deny-why-true"`},
		{[]string{"time"}, ErrFixedField, `authorize_log_fields[0]: field is always logged and cannot be selected "time"`},
		{[]string{"email", "allow", "email"}, ErrDuplicateField, `authorize_log_fields[2]: duplicate authorization log field "email"`},
	}
	for _, tt := range tests {
		_, err := ParseFields(tt.names)
		var fe *FieldError
		if !errors.Is(err, tt.kind) || !errors.As(err, &fe) || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("ParseFields(%q) = %v, want %v with %q", tt.names, err, tt.kind, tt.msg)
		}
	}
}

func TestDefaultFields_LeaveOutMCPFields(t *testing.T) {
	t.Parallel()
	d := DefaultFields()
	for _, f := range []Field{FieldMCPMethod, FieldMCPTool, FieldMCPToolParameters} {
		if slices.Contains(d, f) {
			t.Errorf("default holds %s", f)
		}
	}
	d[0] = "changed"
	if DefaultFields()[0] != FieldRequestID {
		t.Error("DefaultFields shares its slice")
	}
}

func blockedTool() *Record {
	p, err := policy.Parse(map[string]any{
		"allow": map[string]any{"and": []any{map[string]any{"domain": map[string]any{"is": "example.com"}}}},
		"deny":  map[string]any{"or": []any{map[string]any{"mcp_tool": map[string]any{"not_in": []any{"search"}}}}},
	})
	if err != nil {
		panic(err)
	}
	in := &policy.Input{Authenticated: true, User: "u-1", Email: "alice@example.com", MCPMethod: "tools/call", MCPTool: "delete_repo"}
	return &Record{
		Time:              time.Date(2025, 6, 18, 9, 30, 1, 123456789, time.UTC),
		RequestID:         "0d5f6c1e-9a1b-4b8e-a0c0-5a1e2f3b4c5d",
		User:              in.User,
		Email:             in.Email,
		Decision:          p.Evaluate(in),
		MCPMethod:         in.MCPMethod,
		MCPTool:           in.MCPTool,
		MCPToolParameters: "{ \"repo\" : \"octo/hello\",\n \"force\": true }",
	}
}

// decode parses line with encoding/json, checking it is exactly one object.
func decode(t *testing.T, line []byte) map[string]any {
	t.Helper()
	if bytes.ContainsAny(line, "\n\r") {
		t.Fatalf("record spans lines: %s", line)
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("record is not JSON: %v\n%s", err, line)
	}
	if dec.More() {
		t.Fatalf("trailing data after the record: %s", line)
	}
	return m
}

func TestAppendJSON_BlockedToolRecord(t *testing.T) {
	t.Parallel()
	line := AppendJSON(nil, blockedTool(), SelectableFields())
	want := `{"level":"info","service":"authorize","time":"2025-06-18T09:30:01.123456789Z","message":"authorize check",` +
		`"request-id":"0d5f6c1e-9a1b-4b8e-a0c0-5a1e2f3b4c5d","user":"u-1","email":"alice@example.com",` +
		`"allow":false,"allow-why-true":["domain-ok"],"allow-why-false":["mcp-tool-unauthorized"],"deny":true,"deny-why-false":[],` +
		`"mcp-method":"tools/call","mcp-tool":"delete_repo","mcp-tool-parameters":{"repo":"octo/hello","force":true},"client-id":"","mcp-protocol-version":"","mcp-client-name":"","mcp-client-version":""}`
	if string(line) != want {
		t.Fatalf("got\n%s\nwant\n%s", line, want)
	}
	decode(t, line)
}

func TestAppendJSON_HasExactlyTheSelectedFields(t *testing.T) {
	t.Parallel()
	fixed := []string{"level", "service", "time", "message"}
	sets := [][]Field{nil, DefaultFields(), SelectableFields(), {FieldMCPToolParameters}, {FieldMCPTool, FieldUser}}
	for _, fields := range sets {
		for _, r := range []*Record{blockedTool(), {}} {
			m := decode(t, AppendJSON(nil, r, fields))
			want := append([]string(nil), fixed...)
			for _, f := range fields {
				want = append(want, string(f))
			}
			for _, f := range DecisionFields() {
				if !slices.Contains(fields, f) {
					want = append(want, string(f)) // every record carries the decision
				}
			}
			var got []string
			for k := range m {
				got = append(got, k)
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("fields %q: got keys %q", fields, got)
			}
			if m["level"] != "info" || m["service"] != "authorize" || m["message"] != "authorize check" {
				t.Errorf("fixed fields: %v", m)
			}
			if _, err := time.Parse(time.RFC3339Nano, m["time"].(string)); err != nil {
				t.Errorf("time: %v", err)
			}
		}
	}
}

func TestAppendJSON_EmptyValues(t *testing.T) {
	t.Parallel()
	m := decode(t, AppendJSON(nil, &Record{}, SelectableFields()))
	for f, want := range map[string]any{
		"request-id": "", "user": "", "email": "", "allow": false, "deny": false,
		"mcp-method": "", "mcp-tool": "", "mcp-tool-parameters": nil,
	} {
		if m[f] != want {
			t.Errorf("%s = %#v, want %#v", f, m[f], want)
		}
	}
	for _, f := range []string{"allow-why-true", "allow-why-false", "deny-why-false"} {
		if l, ok := m[f].([]any); !ok || len(l) != 0 {
			t.Errorf("%s = %#v, want []", f, m[f])
		}
	}
}

func TestAppendJSON_EscapesHostileStrings(t *testing.T) {
	t.Parallel()
	hostile := []string{
		"a\"b\\c", "line\nbreak\r\n{\"level\":\"info\",\"allow\":true}", "\x00\x01\x1f\x7f", "tab\there",
		"bad utf8 \xff\xfe end", "\xc3", "sep\u2028\u2029", "<script>&amp;</script>", "é漢字😀",
	}
	for _, s := range hostile {
		r := &Record{RequestID: s, User: s, Email: s, MCPMethod: s, MCPTool: s}
		m := decode(t, AppendJSON(nil, r, SelectableFields()))
		want := viaEncodingJSON(s)
		for _, f := range []string{"request-id", "user", "email", "mcp-method", "mcp-tool"} {
			if m[f] != want {
				t.Errorf("%s: %q, want %q", f, m[f], want)
			}
		}
		if m["allow"] != false {
			t.Errorf("%q forged allow", s)
		}
	}
}

// viaEncodingJSON returns s as encoding/json writes and reads it back: each byte of invalid
// UTF-8 becomes U+FFFD.
func viaEncodingJSON(s string) string {
	b, _ := json.Marshal(s)
	var out string
	_ = json.Unmarshal(b, &out)
	return out
}

// TestRedTeam_C1ControlsCannotSplitARecord: NEL (U+0085) and the other C1 controls end a line
// for some log readers (Java's and Python's line splitting, syslog relays), so a tool name or
// argument holding one would split the record there; they are written as escapes, in strings
// and in tool parameters alike, and the record still reads back to the same values.
func TestRedTeam_C1ControlsCannotSplitARecord(t *testing.T) {
	t.Parallel()
	tool := "echo\u0085{\"level\":\"info\",\"allow\":true}\u0080\u009f"
	params := "{\"text\":\"a\u0085b\u009bc\"}"
	for _, validated := range []bool{false, true} {
		r := &Record{MCPMethod: "tools/call", MCPTool: tool, MCPToolParameters: params, MCPToolParametersValidated: validated}
		line := AppendJSON(nil, r, SelectableFields())
		if bytes.ContainsFunc(line, func(r rune) bool { return r >= 0x80 && r <= 0x9f }) {
			t.Fatalf("validated=%v: a raw C1 control in %q", validated, line)
		}
		for _, esc := range []string{`echo\u0085{`, `\u0080\u009f`, `a\u0085b\u009bc`} {
			if !bytes.Contains(line, []byte(esc)) {
				t.Errorf("validated=%v: %s lacks %s", validated, line, esc)
			}
		}
		m := decode(t, line)
		if m["mcp-tool"] != tool || m["allow"] != false {
			t.Errorf("validated=%v: read back tool %q allow %v", validated, m["mcp-tool"], m["allow"])
		}
		var w []byte
		w = NewWriter(SelectableFields()).Append(w, r)
		if !bytes.Equal(w, line) {
			t.Errorf("validated=%v: Writer %s, AppendJSON %s", validated, w, line)
		}
	}
}

func TestAppendJSON_ToolParameters(t *testing.T) {
	t.Parallel()
	tests := []struct {
		raw  string
		want string
	}{
		{`{}`, `{}`},
		{" {\n\t\"a\" : [ 1 , 2 ] ,\r\n \"b\" : { \"c\" : null } } ", `{"a":[1,2],"b":{"c":null}}`},
		{`{"s":"keep  spaces \" and \\ and \n escapes \u0041"}`, `{"s":"keep  spaces \" and \\ and \n escapes \u0041"}`},
		{"{\"s\":\"bad \xff utf8\"}", `{"s":"bad \ufffd utf8"}`},
		{"{\"s\":\"sep \u2028\"}", `{"s":"sep \u2028"}`},
		{`{"a":1},"allow":true,"x":{}`, `null`},
		{`{"a":1`, `null`},
		{`[1,2]`, `null`},
		{`"x"`, `null`},
		{`null`, `null`},
		{``, `null`},
		{`   `, `null`},
	}
	for _, tt := range tests {
		line := AppendJSON(nil, &Record{MCPToolParameters: tt.raw}, append(DecisionFields(), FieldMCPToolParameters))
		m := decode(t, line)
		got, _ := json.Marshal(m["mcp-tool-parameters"])
		var want any
		if err := json.Unmarshal([]byte(tt.want), &want); err != nil {
			t.Fatal(err)
		}
		wantJSON, _ := json.Marshal(want)
		if string(got) != string(wantJSON) {
			t.Errorf("parameters %q: got %s, want %s", tt.raw, got, wantJSON)
		}
		if !bytes.HasSuffix(line, []byte(`"mcp-tool-parameters":`+tt.want+`}`)) {
			t.Errorf("parameters %q: line %s", tt.raw, line)
		}
	}
}

func TestAppendJSON_SkipsUnknownFieldsAndAppends(t *testing.T) {
	t.Parallel()
	line := AppendJSON([]byte("prefix "), &Record{User: "u"}, []Field{"bogus", FieldUser, FieldTime})
	if !bytes.HasPrefix(line, []byte("prefix {")) {
		t.Fatalf("did not append: %s", line)
	}
	m := decode(t, line[len("prefix "):])
	if len(m) != 5+len(DecisionFields()) || m["user"] != "u" {
		t.Errorf("got %v", m)
	}
}

func TestAppendJSON_AllocationFreeWithABuffer(t *testing.T) {
	r := blockedTool()
	fields := SelectableFields()
	buf := make([]byte, 0, 1024)
	allocs := testing.AllocsPerRun(100, func() {
		buf = AppendJSON(buf[:0], r, fields)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per record", allocs)
	}
}

func FuzzAppendJSON(f *testing.F) {
	f.Fuzz(func(t *testing.T, user, tool, params string) {
		r := &Record{User: user, MCPTool: tool, MCPToolParameters: params}
		line := AppendJSON(nil, r, SelectableFields())
		m := decode(t, line)
		if m["user"] != viaEncodingJSON(user) || len(m) != 4+len(SelectableFields()) {
			t.Fatalf("user %q became %q", user, m["user"])
		}
		if p := m["mcp-tool-parameters"]; p != nil {
			if _, ok := p.(map[string]any); !ok {
				t.Fatalf("parameters %q became %#v", params, p)
			}
		}

		// With the promise that params is a valid object: the same line when it is one, and
		// one line with no forged field whatever it is.
		r.MCPToolParametersValidated = true
		trusted := AppendJSON(nil, r, SelectableFields())
		trimmed := strings.TrimLeft(params, " \t\r\n")
		if gjson.Valid(params) && strings.HasPrefix(trimmed, "{") && !bytes.Equal(trusted, line) {
			t.Fatalf("parameters %q: validated line %s, checked line %s", params, trusted, line)
		}
		if bytes.ContainsAny(trusted, "\n\r\u2028\u2029") || bytes.ContainsFunc(trusted, func(r rune) bool { return r < 0x20 || r >= 0x80 && r <= 0x9f }) {
			t.Fatalf("parameters %q broke the line: %q", params, trusted)
		}
		var tm map[string]any
		if json.Unmarshal(trusted, &tm) == nil && (len(tm) != 4+len(SelectableFields()) || tm["allow"] != false || tm["user"] != m["user"]) {
			t.Fatalf("parameters %q forged fields: %s", params, trusted)
		}
	})
}

func TestAppendJSON_ValidatedParametersStayInTheirField(t *testing.T) {
	t.Parallel()
	tests := []struct {
		raw  string
		want string
	}{
		{" {\n\t\"a\" : [ 1 , 2 ] ,\r\n \"b\" : { \"c\" : null } } ", `{"a":[1,2],"b":{"c":null}}`},
		{"{\"s\":\"bad \xff utf8 \u2028\"}", `{"s":"bad \ufffd utf8 \u2028"}`},
		{`{"s":"` + strings.Repeat("long text ", 20) + `\" quoted"}`, `{"s":"` + strings.Repeat("long text ", 20) + `\" quoted"}`},
		// Broken promises.
		{`{"a":1},"allow":true,"x":{}`, `null`},
		{`{"a":[1}`, `null`},
		{`{"a":"unterminated}`, `null`},
		{"{\"a\":\"line\nbreak\"}", `null`},
		{"{\"a\":\"esc\\\nbreak\"}", `null`},
		{"{\"a\":1\u2028}", `null`},
		{"{\"a\":\x01}", `null`},
		{`[1]`, `null`},
		{``, `null`},
		{strings.Repeat("{", 2000), `null`},
	}
	for _, tt := range tests {
		line := AppendJSON(nil, &Record{MCPToolParameters: tt.raw, MCPToolParametersValidated: true}, append(DecisionFields(), FieldMCPToolParameters))
		if !bytes.HasSuffix(line, []byte(`"mcp-tool-parameters":`+tt.want+`}`)) {
			t.Errorf("parameters %q: line %s", tt.raw, line)
		}
	}
}

func BenchmarkAppendJSON(b *testing.B) {
	r := blockedTool()
	fields := SelectableFields()
	buf := make([]byte, 0, 1024)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendJSON(buf[:0], r, fields)
	}
}
