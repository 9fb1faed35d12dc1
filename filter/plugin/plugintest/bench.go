package plugintest

import "strings"

// ToolsCallBody returns a tools/call of the allowed tool "echo" that is exactly size bytes
// long (size ≥ 100), padding the text argument.
func ToolsCallBody(size int) string {
	head := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"`
	tail := `"}}}`
	return head + strings.Repeat("x", size-len(head)-len(tail)) + tail
}

// BenchRequests are the requests whose per-request cost BENCHMARKS.md reports. Each runs
// with TokenAlice on the recommended-pattern route, so after the first the bundle is cached.
func BenchRequests() map[string]Request {
	auth := [][2]string{jsonCT, bearer(TokenAlice)}
	return map[string]Request{
		"ToolsCall1KiB": {Method: "POST", Authority: "mcp.example.com", Path: "/mcp", Headers: auth, Chunks: []string{ToolsCallBody(1024)}},
		"ToolsCall4KiB": {Method: "POST", Authority: "mcp.example.com", Path: "/mcp", Headers: auth, Chunks: []string{ToolsCallBody(4096)}},
		"ToolsList":     {Method: "POST", Authority: "mcp.example.com", Path: "/mcp", Headers: auth, Chunks: []string{toolsList}},
		"PassThrough":   {Method: "GET", Authority: "elsewhere.example.net", Path: "/"},
		"DeniedCall":    {Method: "POST", Authority: "mcp.example.com", Path: "/mcp", Headers: auth, Chunks: []string{toolsCall("1", "delete_everything")}},
	}
}
