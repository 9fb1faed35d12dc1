package authlog

import (
	"testing"
	"time"

	"github.com/mcpmesh/gateway/shared/golden"
	"github.com/mcpmesh/gateway/shared/policy"
)

// goldenRecords are records with every field set: a denied tool call, an allowed one, and
// one whose strings need escaping (quotes, a newline, NEL, U+2028, invalid UTF-8).
func goldenRecords() []*Record {
	allowed, err := policy.Parse(map[string]any{
		"allow": map[string]any{"and": []any{map[string]any{"domain": map[string]any{"is": "example.com"}}}},
		"deny":  map[string]any{"and": []any{map[string]any{"mcp_tool": map[string]any{"not_in": []any{"search"}}}}},
	})
	if err != nil {
		panic(err)
	}
	in := &policy.Input{Authenticated: true, User: "u-2", Email: "bob@example.com", MCPMethod: "tools/call", MCPTool: "search"}
	escapes := blockedTool()
	escapes.Time = time.Date(2025, 6, 18, 9, 30, 2, 0, time.FixedZone("IST", 5*3600+1800))
	escapes.User = "u-\"3\"\n"
	escapes.Email = "carol\u0085@example.com"
	escapes.MCPTool = "rm\u2028-rf\xff"
	escapes.MCPToolParameters = `{"path":"/\u0000", "why": "line\u2028break"}`
	return []*Record{
		blockedTool(),
		{
			Time:              time.Date(2025, 6, 18, 9, 30, 1, 500000000, time.UTC),
			RequestID:         "req-2",
			User:              in.User,
			Email:             in.Email,
			Decision:          allowed.Evaluate(in),
			MCPMethod:         in.MCPMethod,
			MCPTool:           in.MCPTool,
			MCPToolParameters: `{"q":"gateway","limit":10}`,
		},
		escapes,
	}
}

// TestGolden_Records: records with every field, one per line, as AppendJSON and a Writer
// write them (testdata/golden/records.jsonl).
func TestGolden_Records(t *testing.T) {
	t.Parallel()
	fields := SelectableFields()
	for _, tt := range []struct {
		name   string
		append func([]byte, *Record) []byte
	}{
		{"AppendJSON", func(dst []byte, r *Record) []byte { return AppendJSON(dst, r, fields) }},
		{"Writer", NewWriter(fields).Append},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out []byte
			for _, r := range goldenRecords() {
				out = append(tt.append(out, r), '\n')
			}
			golden.Check(t, "records.jsonl", out)
		})
	}
}

// TestGolden_RecordsWithoutDecisionFields: with authorize_log_fields listing only
// request-id, user, email and the MCP fields, records still carry the decision after them
// (a blocked tool says "allow":false and mcp-tool-unauthorized), and secrets in the tool
// arguments are redacted (testdata/golden/records_mcp_fields.jsonl).
func TestGolden_RecordsWithoutDecisionFields(t *testing.T) {
	t.Parallel()
	fields := []Field{FieldRequestID, FieldUser, FieldEmail, FieldMCPMethod, FieldMCPTool, FieldMCPToolParameters}
	secret := blockedTool()
	secret.MCPToolParameters = `{"repo":"octo/hello","auth":{"Token":"ghp_secret","user":"al"},"password":"hunter2"}`
	var out []byte
	for _, r := range append(goldenRecords(), secret) {
		out = append(NewWriter(fields).Append(out, r), '\n')
	}
	golden.Check(t, "records_mcp_fields.jsonl", out)
}
