package plugintest

import (
	"encoding/json"
	"strconv"
	"strings"
)

// Cases of tool lists filtered by policy (docs/tool-lists.md): the response to a tools/list
// the filter let through lists only the tools the user may call, as JSON or as an event
// stream in any chunking; what the filter cannot read safely becomes a JSON-RPC -32603 error.

// listTools is a tools/list result of the demo tools with id, and extra members after tools.
func listTools(id string, extra string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"result":{"tools":[` +
		`{"name":"echo","description":"Echoes text","inputSchema":{"type":"object","properties":{"text":{"type":"string"}}}},` +
		`{"name":"delete_everything","description":"Deletes everything","inputSchema":{"type":"object"}},` +
		`{"name":"add","description":"Adds","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}]` + extra + `}}`
}

// bigToolList is a tools/list result of n tools named tool0… with one delete_everything.
func bigToolList(id string, n int) string {
	var b strings.Builder
	b.WriteString(`{"jsonrpc":"2.0","id":` + id + `,"result":{"tools":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		name := "tool" + strconv.Itoa(i)
		if i == n/2 {
			name = "delete_everything"
		}
		b.WriteString(`{"name":"` + name + `","description":"` + strings.Repeat("d", 200) + `","inputSchema":{"type":"object","properties":{"x":{"type":"string"}}}}`)
	}
	b.WriteString(`]}}`)
	return b.String()
}

// chunks splits s into pieces of n bytes.
func chunks(s string, n int) []string {
	var out []string
	for len(s) > n {
		out = append(out, s[:n])
		s = s[n:]
	}
	return append(out, s)
}

// toolNames returns the names of the tools in every tools/list result of a body (one message,
// a batch, or an event stream's data lines), read with encoding/json.
func toolNames(body string) ([]string, string) {
	var msgs []json.RawMessage
	if strings.Contains(body, "data:") {
		for _, ev := range strings.Split(strings.ReplaceAll(body, "\r\n", "\n"), "\n\n") {
			var data []string
			for _, line := range strings.Split(ev, "\n") {
				if d, ok := strings.CutPrefix(line, "data:"); ok {
					data = append(data, strings.TrimPrefix(d, " "))
				}
			}
			if d := strings.Join(data, "\n"); strings.HasPrefix(d, "{") {
				msgs = append(msgs, json.RawMessage(d))
			}
		}
	} else if strings.HasPrefix(body, "[") {
		if err := json.Unmarshal([]byte(body), &msgs); err != nil {
			return nil, "not JSON: " + err.Error()
		}
	} else {
		msgs = append(msgs, json.RawMessage(body))
	}
	var names []string
	for _, m := range msgs {
		var r struct {
			Result *struct {
				Tools []struct {
					Name string `json:"name"`
				} `json:"tools"`
			} `json:"result"`
		}
		if err := json.Unmarshal(m, &r); err != nil {
			return nil, "not JSON: " + err.Error()
		}
		if r.Result != nil {
			for _, t := range r.Result.Tools {
				names = append(names, t.Name)
			}
		}
	}
	return names, ""
}

// listsExactly checks that the body's lists hold exactly want, in order.
func listsExactly(want ...string) func(string) string {
	return func(body string) string {
		got, problem := toolNames(body)
		if problem != "" {
			return problem
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			return "lists " + strings.Join(got, ",") + ", want " + strings.Join(want, ",")
		}
		return ""
	}
}

// refusedList checks that the body is the -32603 error in place of the list, with id.
func refusedList(id string) func(string) string {
	return func(body string) string {
		if !strings.Contains(body, `"id":`+id+`,"error":{"code":-32603,"message":"Internal error: the gateway could not filter the tool list"`) {
			return "not the -32603 error for id " + id
		}
		if strings.Contains(body, "delete_everything") {
			return "the unfiltered list leaked"
		}
		return ""
	}
}

var (
	jsonResponse = [][2]string{{":status", "200"}, {"content-type", "application/json"}}
	sseResponse  = [][2]string{{":status", "200"}, {"content-type", "text/event-stream"}, {"cache-control", "no-cache"}}
)

func toolListCases() []Case {
	mcp := "mcp.example.com"
	alice := bearer(TokenAlice)
	list := post(mcp, "/mcp", toolsList, alice)
	noLength := func(h Headers) string {
		if _, ok := h.Get("content-length"); ok {
			return "content-length kept on a rewritten body"
		}
		return ""
	}
	filtered := []string{"mcp_gateway_tools_list_filtered"}
	refused := []string{"mcp_gateway_tools_list_refused"}
	cs := []Case{
		{
			Name: "ToolListJSONListsOnlyAllowedTools", Request: list,
			Response:       append(jsonResponse, [2]string{"content-length", strconv.Itoa(len(listTools("2", "")))}),
			ResponseBody:   []string{listTools("2", "")},
			ClientResponse: noLength, ClientBody: listsExactly("echo", "add"),
			Want: Want{CheckCalls: 1, Counters: filtered, ClientBodyGolden: "toollist-json.txt"},
		},
		{
			Name: "ToolListEventStreamSplitAcrossManyChunksListsOnlyAllowedTools", Request: list,
			Response: sseResponse,
			ResponseBody: chunks(": keep-alive\n\n"+
				"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n"+
				"event: message\nid: 7\ndata: "+listTools("2", "")+"\n\n"+
				"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"done\"}}\n\n", 7),
			ClientBody: listsExactly("echo", "add"),
			Want:       Want{CheckCalls: 1, Counters: filtered, ClientBodyGolden: "toollist-sse.txt"},
		},
		{
			Name: "ToolListEventStreamWithCRLFAndDataOverSeveralLinesIsRewritten", Request: list,
			Response:     sseResponse,
			ResponseBody: chunks("event: message\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\r\ndata:\"result\":{\"tools\":[{\"name\":\"delete_everything\"},\r\ndata: {\"name\":\"echo\"}]}}\r\n\r\n", 5),
			ClientBody:   listsExactly("echo"),
			Want:         Want{CheckCalls: 1, Counters: filtered},
		},
		{
			Name: "ToolListLargerThanAChunkIsFilteredWhole", Request: post(OpenHost, "/mcp", toolsList, alice),
			Response: jsonResponse, ResponseBody: chunks(bigToolList("2", 50), 1000),
			ClientBody: func(body string) string {
				names, problem := toolNames(body)
				if problem != "" {
					return problem
				}
				if strings.Contains(strings.Join(names, ","), "delete_everything") || len(names) != 49 {
					return "lists " + strings.Join(names, ",") + "; want the 49 tools but delete_everything"
				}
				return ""
			},
			Want: Want{CheckCalls: 1, Counters: filtered},
		},
		{
			Name: "ToolListPaginationKeepsNextCursor", Request: list,
			Response: jsonResponse, ResponseBody: []string{listTools("2", `,"nextCursor":"page-2"`)},
			ClientBody: func(body string) string {
				if !strings.Contains(body, `"nextCursor":"page-2"`) {
					return "nextCursor lost"
				}
				return listsExactly("echo", "add")(body)
			},
			Want: Want{CheckCalls: 1, Counters: filtered},
		},
		{
			// The answer to ping has result.tools: clients cannot tell it from a list, so it is
			// filtered too (a list for another id is the smuggling attack, cases_toollist_smuggle.go).
			Name:     "ToolListBatchFiltersEveryListAndEveryResultWithTools",
			Request:  post(mcp, "/mcp", `[{"jsonrpc":"2.0","id":"a","method":"tools/list"},{"jsonrpc":"2.0","id":3,"method":"ping"},{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"cursor":"page-2"}}]`, alice),
			Response: jsonResponse, ResponseBody: []string{`[` + listTools(`"a"`, "") + `,{"jsonrpc":"2.0","id":3,"result":{"tools":[{"name":"delete_everything"}]}},` + listTools("4", "") + `]`},
			ClientBody: func(body string) string {
				if !strings.Contains(body, `{"jsonrpc":"2.0","id":3,"result":{"tools":[]}}`) {
					return "the tools in the response to ping were not filtered"
				}
				if strings.Contains(body, "delete_everything") {
					return "delete_everything left in a list"
				}
				return ""
			},
			Want: Want{CheckCalls: 1, Counters: filtered},
		},
		{
			Name: "ToolListIDMatchedByValue", Request: list,
			Response: jsonResponse, ResponseBody: []string{listTools("2.0", "")},
			ClientBody: listsExactly("echo", "add"),
			Want:       Want{CheckCalls: 1, Counters: filtered},
		},
		{
			Name: "ToolListResponseToAnotherIDIsFilteredToo", Request: list,
			Response: jsonResponse, ResponseBody: []string{listTools(`"two"`, "")},
			ClientBody: listsExactly("echo", "add"),
			Want:       Want{CheckCalls: 1, Counters: filtered},
		},
		{
			Name: "ToolListErrorResponsePassesUnchanged", Request: list,
			Response: jsonResponse, ResponseBody: []string{`{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"no tools"}}`},
			ClientBody: func(body string) string {
				if body != `{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"no tools"}}` {
					return "changed"
				}
				return ""
			},
			Want: Want{CheckCalls: 1},
		},
		{
			Name: "ToolListOtherUserSeesTheirOwnList", Request: post(OpenHost, "/mcp", toolsList, bearer(TokenBob)),
			Response: jsonResponse, ResponseBody: []string{listTools("2", "")},
			ClientBody: listsExactly("echo", "add"),
			Want:       Want{CheckCalls: 1, Counters: filtered},
		},
		{
			Name: "ToolListHeldBodyEndedByTrailersIsFilteredNotReleased", Request: list,
			Response: jsonResponse, ResponseBody: chunks(listTools("2", ""), 50), ResponseTrailers: [][2]string{{"grpc-status", "0"}},
			ClientBody: listsExactly("echo", "add"),
			Want:       Want{CheckCalls: 1, Counters: filtered},
		},
		{
			Name: "ToolListOptOutRoutePassesTheListUnchanged", Request: post(NoFilterHost, "/mcp", toolsList, alice),
			Response: jsonResponse, ResponseBody: []string{listTools("2", "")},
			ClientBody: listsExactly("echo", "delete_everything", "add"),
			Want:       Want{CheckCalls: 1},
		},
		{
			Name:     "ToolListUnder20260728IsPrivateToTheUser",
			Request:  post(mcp, "/mcp", list2026, append([][2]string{alice}, mcpHeaders(v2026, "tools/list", "")...)...),
			Response: jsonResponse, ResponseBody: []string{listTools("2", `,"ttlMs":60000,"cacheScope":"shared"`)},
			ClientBody: func(body string) string {
				if !strings.Contains(body, `"ttlMs":60000,"cacheScope":"private"}`) || strings.Contains(body, "shared") {
					return "cacheScope not private"
				}
				return listsExactly("echo", "add")(body)
			},
			Want: Want{CheckCalls: 1, Counters: filtered},
		},
		{
			Name:     "ToolListUnder20260728WithoutCacheScopeGetsPrivate",
			Request:  post(mcp, "/mcp", list2026, append([][2]string{alice}, mcpHeaders(v2026, "tools/list", "")...)...),
			Response: sseResponse, ResponseBody: []string{"data: " + listTools("2", "") + "\n\n"},
			ClientBody: func(body string) string {
				if !strings.Contains(body, `,"cacheScope":"private"}`) {
					return "cacheScope private not added"
				}
				return listsExactly("echo", "add")(body)
			},
			Want: Want{CheckCalls: 1, Counters: filtered},
		},
		{
			Name: "ToolListEventStreamStartingWithAByteOrderMarkIsFiltered", Request: list,
			Response: sseResponse, ResponseBody: []string{"\xef", "\xbb\xbfdata: " + listTools("2", "") + "\n\n"},
			ClientBody: listsExactly("echo", "add"),
			Want:       Want{CheckCalls: 1, Counters: filtered},
		},
		{
			Name: "ToolListResponseWithAStringIDTheTSClientReadsAsTheNumberIsFiltered", Request: list,
			Response: jsonResponse, ResponseBody: []string{listTools(`" 2"`, "")},
			ClientBody: listsExactly("echo", "add"),
			Want:       Want{CheckCalls: 1, Counters: filtered},
		},
		{
			Name:     "ToolListOnTheEventStreamGETIsFilteredWhateverItsID",
			Request:  get(mcp, "/mcp", alice, [2]string{"accept", "text/event-stream"}),
			Response: sseResponse,
			ResponseBody: chunks("event: message\nid: 1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n"+
				"data: not json, passed as it is\n\n"+
				"id: 2\ndata: "+listTools("77", "")+"\n\n", 33),
			ClientBody: func(body string) string {
				if !strings.Contains(body, "data: not json, passed as it is\n\n") || !strings.Contains(body, "list_changed") {
					return "other events changed"
				}
				return listsExactly("echo", "add")(body)
			},
			Want: Want{CheckCalls: 1, Counters: filtered},
		},
		{
			Name:     "ToolListOnTheLegacyEventStreamIsFilteredAndItsEndpointStillBound",
			Request:  get(OpenHost, "/mcp/sse", alice, [2]string{"accept", "text/event-stream"}),
			Response: sseResponse,
			ResponseBody: []string{"event: endpoint\ndata: /mcp/messages?sessionId=up-123\n\n" +
				"event: message\ndata: " + bigToolList("5", 3) + "\n\n"},
			ClientBody: func(body string) string {
				if strings.Contains(body, "sessionId=up-123") || !strings.Contains(body, "sessionId=") {
					return "the endpoint's session was not bound"
				}
				if strings.Contains(body, "delete_everything") {
					return "the list was not filtered"
				}
				return ""
			},
			Want: Want{CheckCalls: 1, Counters: filtered},
		},
		{
			Name:    "ToolListRouteAsksTheUpstreamForUncompressedAnswers",
			Request: post(mcp, "/mcp", toolsList, alice, [2]string{"accept-encoding", "gzip, br"}),
			Want:    Want{CheckCalls: 1, Upstream: map[string]string{"accept-encoding": ""}},
		},
		{
			Name: "ToolListNotificationsOnlyStreamPassesUntouched", Request: list,
			Response:     sseResponse,
			ResponseBody: []string{"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n", "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":1}}\n\n"},
			ClientBody: func(body string) string {
				if body != "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":1}}\n\n" {
					return "notifications changed"
				}
				return ""
			},
			Want: Want{CheckCalls: 1},
		},
	}
	// Fail closed: each of these becomes the -32603 error, counted and logged.
	failClosed := []struct {
		name     string
		response [][2]string
		body     []string
	}{
		{"Unparsable", jsonResponse, []string{`{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"echo"}`}},
		{"DuplicateResult", jsonResponse, []string{`{"jsonrpc":"2.0","id":2,"result":{"tools":[]},"result":{"tools":[{"name":"delete_everything"}]}}`}},
		{"DuplicateToolName", jsonResponse, []string{`{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"echo","name":"delete_everything"}]}}`}},
		{"DuplicateTools", jsonResponse, []string{`{"jsonrpc":"2.0","id":2,"result":{"tools":[],"tool\u0073":[{"name":"delete_everything"}]}}`}},
		{"ToolsNotAnArray", jsonResponse, []string{`{"jsonrpc":"2.0","id":2,"result":{"tools":{"name":"delete_everything"}}}`}},
		{"ToolWithoutName", jsonResponse, []string{`{"jsonrpc":"2.0","id":2,"result":{"tools":[{"title":"delete_everything"}]}}`}},
		{"ToolNameCaseVariant", jsonResponse, []string{`{"jsonrpc":"2.0","id":2,"result":{"tools":[{"Name":"delete_everything","name":"echo"}]}}`}},
		{"OtherMediaType", [][2]string{{":status", "200"}, {"content-type", "text/plain"}}, []string{listTools("2", "")}},
		{"Compressed", [][2]string{{":status", "200"}, {"content-type", "application/json"}, {"content-encoding", "gzip"}}, []string{listTools("2", "")}},
		{"OverTheBound", jsonResponse, chunks(bigToolList("2", 2500), 64<<10)},
		{"MalformedEvent", sseResponse, []string{"data: " + listTools("2", "")[:60] + "\n\n", "data: " + listTools("2", "") + "\n\n"}},
	}
	for _, f := range failClosed {
		cs = append(cs, Case{
			Name: "ToolListFailsClosed" + f.name, Request: list,
			Response: f.response, ResponseBody: f.body,
			ClientBody: refusedList("2"),
			Want:       Want{CheckCalls: 1, Counters: refused, LogContains: []string{"tools/list response refused"}},
		})
	}
	cs[len(cs)-len(failClosed)].Want.ClientBodyGolden = "toollist-refused.txt"
	return cs
}
