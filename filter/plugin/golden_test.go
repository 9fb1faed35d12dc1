package plugin_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/mcpmesh/gateway/filter/plugin/plugintest"
	"github.com/mcpmesh/gateway/shared/golden"
)

// TestGolden_JSONRPCErrorReplies: the JSON-RPC error replies the filter makes on MCP server
// routes (403 denied, 404 unknown session, 400 unreadable body), each in
// testdata/golden/<status>-<name>.json (the reply's Content-Type, a blank line, the body
// and a newline).
func TestGolden_JSONRPCErrorReplies(t *testing.T) {
	t.Parallel()
	alice := [2]string{"authorization", "Bearer " + plugintest.TokenAlice}
	post := func(authority, body string, headers ...[2]string) plugintest.Request {
		return plugintest.Request{Method: "POST", Authority: authority, Path: "/mcp",
			Headers: append([][2]string{{"content-type", "application/json"}}, headers...), Chunks: []string{body}}
	}
	call := func(id, tool string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":{}}}`
	}
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	for _, tt := range []struct {
		name   string
		status int
		req    plugintest.Request
	}{
		{"denied-tool", 200, plugintest.DeniedToolCall()},
		{"denied-batch", 200, post("mcp.example.com", `[`+call("1", "echo")+`,{"jsonrpc":"2.0","method":"notifications/x"},`+call(`"b"`, `sh\"ut<down>`)+`]`, alice)},
		{"denied-other-domain", 403, post("mcp.example.com", list, [2]string{"authorization", "Bearer " + plugintest.TokenBob})},
		{"denied-without-messages", 403, plugintest.Request{Method: "GET", Authority: "mcp.example.com", Path: "/mcp",
			Headers: [][2]string{{"authorization", "Bearer " + plugintest.TokenBob}, {"accept", "text/event-stream"}}}},
		{"session-not-found", 404, post(plugintest.OpenHost, list, alice, [2]string{"mcp-session-id", "up-session-1"})},
		{"parse-error", 400, post("mcp.example.com", `{"jsonrpc":"2.0",`, alice)},
		{"empty-body", 400, plugintest.Request{Method: "POST", Authority: "mcp.example.com", Path: "/mcp",
			Headers: [][2]string{{"content-type", "application/json"}, alice}}},
		{"invalid-request", 400, post("mcp.example.com", `{"jsonrpc":"2.0","id":"dup","method":"tools/list","method":"tools/call"}`, alice)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			nf, err := plugintest.NewNativeFilter()
			if err != nil {
				t.Fatal(err)
			}
			r := nf.Run(tt.req)
			if r.Status != tt.status {
				t.Fatalf("status %d (forwarded %v), want %d; body %s", r.Status, r.Forwarded, tt.status, r.Body)
			}
			var out strings.Builder
			out.WriteString("content-type: " + r.ReplyHeaders["content-type"] + "\n\n" + r.Body + "\n")
			golden.Check(t, strconv.Itoa(tt.status)+"-"+tt.name+".json", []byte(out.String()))
		})
	}
}
