package plugintest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strings"
)

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
		// ToolsCall1KiB on a route with the same policy and a shadow policy (cases_shadow.go).
		"ToolsCall1KiBShadow": {Method: "POST", Authority: ShadowLaxHost, Path: "/mcp", Headers: auth, Chunks: []string{ToolsCallBody(1024)}},
		"ToolsCall1KiBInSession": {Method: "POST", Authority: "mcp.example.com", Path: "/mcp", Chunks: []string{ToolsCallBody(1024)},
			Headers: append(auth, [2]string{"mcp-session-id", BoundSession("alice", "https://mcp.example.com/mcp", "up-session-1")})},
	}
}

// BoundSession returns the Mcp-Session-Id a client holds for the upstream session id of sub
// on routeID with the fake token service's session key: the format of docs/decisions.md
// ("MCP sessions are bound to their user"), written here apart from the filter's own code.
func BoundSession(sub, routeID, id string) string {
	key, err := base64.RawURLEncoding.DecodeString(SessionKey(sub, routeID))
	if err != nil {
		panic(err)
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:16]) + "." + id
}

// BenchToolLists are the tools/list exchanges whose per-request cost BENCHMARKS.md reports:
// a list of 50 tools (49 allowed) answered as application/json or as an event stream and
// filtered, and the same JSON answer on a route with filter_tool_list: false.
func BenchToolLists() map[string]Case {
	auth := [][2]string{jsonCT, bearer(TokenAlice)}
	list := bigToolList("2", 50)
	call := Request{Method: "POST", Authority: "mcp.example.com", Path: "/mcp", Headers: auth, Chunks: []string{ToolsCallBody(1024)}}
	result := ToolsCallResult(1024)
	return map[string]Case{
		"ToolsList50JSON": {Request: Request{Method: "POST", Authority: OpenHost, Path: "/mcp", Headers: auth, Chunks: []string{toolsList}},
			Response: jsonResponse, ResponseBody: []string{list}},
		"ToolsList50SSE": {Request: Request{Method: "POST", Authority: OpenHost, Path: "/mcp", Headers: auth, Chunks: []string{toolsList}},
			Response: sseResponse, ResponseBody: []string{"event: message\ndata: " + list + "\n\n"}},
		// 50 pinned tools (echo and add 25 times each), every digest computed and matching.
		"ToolsList50JSONPinned": {Request: Request{Method: "POST", Authority: PinnedHost, Path: "/mcp", Headers: auth, Chunks: []string{toolsList}},
			Response: jsonResponse, ResponseBody: []string{listOf(strings.Repeat(echoTool+",", 25) + strings.TrimSuffix(strings.Repeat(addTool+",", 25), ","))}},
		"ToolsList50Unfiltered": {Request: Request{Method: "POST", Authority: NoFilterHost, Path: "/mcp", Headers: auth, Chunks: []string{toolsList}},
			Response: jsonResponse, ResponseBody: []string{list}},
		// The answer to every POST on a filtering route is read for smuggled tool lists
		// (cases_toollist_smuggle.go): a 1 KiB tools/call answered with a 1 KiB result that
		// names no tools, as JSON and as one event.
		"ToolsCall1KiBAnswer1KiBJSON": {Request: call, Response: jsonResponse, ResponseBody: []string{result}},
		"ToolsCall1KiBAnswer1KiBSSE":  {Request: call, Response: sseResponse, ResponseBody: []string{"event: message\ndata: " + result + "\n\n"}},
	}
}

// ToolsCallResult returns the answer to a tools/call with id 1: one text content, padded so
// that the answer is exactly size bytes long (size ≥ 100).
func ToolsCallResult(size int) string {
	head := `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"`
	tail := `"}]}}`
	return head + strings.Repeat("y", size-len(head)-len(tail)) + tail
}
