package jsonrpc

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// Text that any JSON reader decodes to a member named tools is found by MayHoldToolList.
func TestMayHoldToolList(t *testing.T) {
	for _, tc := range []struct {
		body string
		want bool
	}{
		{`{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`, true},
		{`{"jsonrpc":"2.0","id":1,"result":{"tool\u0073":[]}}`, true},
		{`{"jsonrpc":"2.0","id":1,"result":{"\u0074ools":[]}}`, true},
		{`{"jsonrpc":"2.0","id":1,"result":{"t\u006Fols":[]}}`, true},
		{`{"jsonrpc":"2.0","id":1,"result":{"too\u006cs":[]}}`, true},
		// A string "tools" is read too (a parse more, never a list missed).
		{`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"tools"}]}}`, true},
		{`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"{\"tools\":[]}"}]}}`, false},
		{`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"\u003cb\u003e"}]}}`, false},
	} {
		if got := MayHoldToolList([]byte(tc.body)); got != tc.want {
			t.Errorf("MayHoldToolList(%s) = %v, want %v", tc.body, got, tc.want)
		}
		// The check must agree with a JSON reader on what it rules out.
		var v struct {
			Result map[string]json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal([]byte(tc.body), &v); err != nil {
			t.Fatal(err)
		}
		if _, ok := v.Result["tools"]; ok && !MayHoldToolList([]byte(tc.body)) {
			t.Errorf("%s has result.tools for encoding/json", tc.body)
		}
	}
}

// With IDs and AnyID, the responses to IDs are read strictly and the others as AnyID.
func TestRewriteToolListsIDsAndAnyID(t *testing.T) {
	f := &ToolListFilter{IDs: []string{IDKey("2")}, AnyID: true, Allow: func(name, _ string) bool { return name != "deny" }}
	list := func(id string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"result":{"tools":[{"name":"ok"},{"name":"deny"}]}}`
	}
	for _, tc := range []struct {
		name, body string
		wantErr    bool
	}{
		{"own list", list("2"), false},
		{"other list", list("7"), false},
		{"batch of both", "[" + list("2") + "," + list("7") + "]", false},
		{"own result without tools", `{"jsonrpc":"2.0","id":2,"result":{}}`, true},
		{"other result without tools", `{"jsonrpc":"2.0","id":7,"result":{}}`, false},
		{"own response without result", `{"jsonrpc":"2.0","id":2}`, true},
		{"not JSON", `{"jsonrpc":`, true},
	} {
		out, _, err := RewriteToolLists([]byte(tc.body), f)
		if (err != nil) != tc.wantErr {
			t.Errorf("%s: err = %v, want error %v", tc.name, err, tc.wantErr)
			continue
		}
		if err == nil && strings.Contains(string(out), `"deny"`) {
			t.Errorf("%s: refused tool kept in %s", tc.name, out)
		}
	}
}

// FuzzMayHoldToolList checks that MayHoldToolList never rules out a message or batch in which
// encoding/json finds a result with a tools member.
func FuzzMayHoldToolList(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`,
		`[{"id":1,"result":{"tool\u0073":[]}}]`,
		`{"id":1,"result":{"content":[]}}`,
		`"tools"`, `l"tools"`, `"tools`, `tools"`, `"too"tools"ls"`, `ll"tooll"tools"`, `"tool`, `l`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if got, want := containsToolsKey(body), bytes.Contains(body, toolsKey); got != want {
			t.Fatalf("containsToolsKey(%q) = %v, bytes.Contains %v", body, got, want)
		}
		if MayHoldToolList(body) {
			return
		}
		type msg struct {
			Result map[string]json.RawMessage `json:"result"`
		}
		var one msg
		var batch []msg
		if json.Unmarshal(body, &one) == nil {
			batch = append(batch, one)
		} else if json.Unmarshal(body, &batch) != nil {
			return
		}
		for _, m := range batch {
			if _, ok := m.Result["tools"]; ok {
				t.Fatalf("%q has result.tools but MayHoldToolList rules it out", body)
			}
		}
	})
}
