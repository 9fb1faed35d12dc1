package authlog

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpmesh/gateway/shared/golden"
	"github.com/mcpmesh/gateway/shared/policy"
)

// TestGolden_ShadowRecord: a record with a shadow decision ends with the five shadow fields,
// written alike by AppendJSON and a Writer (testdata/golden/record_shadow.jsonl); a record
// without one has none.
func TestGolden_ShadowRecord(t *testing.T) {
	t.Parallel()
	stricter, err := policy.ParseKey("policy_shadow", map[string]any{
		"allow": map[string]any{"and": []any{map[string]any{"domain": map[string]any{"is": "example.com"}}}},
		"deny":  map[string]any{"and": []any{map[string]any{"mcp_tool": map[string]any{"not_in": []any{"echo"}}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	in := &policy.Input{Authenticated: true, User: "u-1", Email: "alice@example.com", MCPMethod: "tools/call", MCPTool: "search"}
	shadow := stricter.Evaluate(in)
	r := blockedTool()
	r.Shadow = &shadow
	a := AppendJSON(nil, r, DefaultFields())
	w := NewWriter(DefaultFields()).Append(nil, r)
	if string(a) != string(w) {
		t.Fatalf("AppendJSON and Writer differ:\n%s\n%s", a, w)
	}
	if !json.Valid(a) || !strings.HasSuffix(string(a), `"shadow-deny-why-false":[]}`) {
		t.Fatalf("record %s", a)
	}
	golden.Check(t, "record_shadow.jsonl", append(a, '\n'))
	if plain := AppendJSON(nil, blockedTool(), DefaultFields()); strings.Contains(string(plain), "shadow") {
		t.Errorf("a record without a shadow decision has shadow fields: %s", plain)
	}
}
