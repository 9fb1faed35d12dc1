package plugintest

import "strings"

// toolListGETCases: a hostile MCP server answers the event-stream GET in a form the filter
// did not read, to deliver a tool list (a changed definition, a tool the user may not call)
// that the client takes unfiltered. Clients take any 2xx answer to the GET as the stream
// (the TS SDK checks response.ok), and decompress what the server compressed even though
// the gateway asked for identity.
func toolListGETCases() []Case {
	mcp := "mcp.example.com"
	getSSE := get(mcp, "/mcp", bearer(TokenAlice), [2]string{"accept", "text/event-stream"})
	noDeleteEverything := func(body string) string {
		if strings.Contains(body, "delete_everything") {
			return "the unfiltered list reached the client"
		}
		return ""
	}
	notAllowed := `{"detail":"Method Not Allowed"}`
	return []Case{
		{
			// Guard: an error answer to the GET (a server without the stream) passes as it is.
			Name:         "ToolListGETAnsweredWithAnErrorPassesUnchanged",
			Request:      getSSE,
			Response:     [][2]string{{":status", "405"}, {"content-type", "application/json"}},
			ResponseBody: []string{notAllowed},
			ClientBody: func(body string) string {
				if body != notAllowed {
					return "the error answer changed"
				}
				return ""
			},
			Want: Want{CheckCalls: 1},
		},
		{
			Name: "RedTeamToolListOnAnEventStreamGETAnswered203IsFiltered", RedTeam: true,
			Request:      getSSE,
			Response:     [][2]string{{":status", "203"}, {"content-type", "text/event-stream"}},
			ResponseBody: []string{"id: 2\ndata: " + listTools("77", "") + "\n\n"},
			ClientBody:   listsExactly("echo", "add"),
			Want:         Want{CheckCalls: 1, Counters: []string{"mcp_gateway_tools_list_filtered"}},
		},
		{
			Name: "RedTeamToolListOnACompressedEventStreamGETIsRefused", RedTeam: true,
			Request:      getSSE,
			Response:     [][2]string{{":status", "200"}, {"content-type", "text/event-stream"}, {"content-encoding", "gzip"}},
			ResponseBody: []string{"id: 2\ndata: " + listTools("77", "") + "\n\n"},
			ClientBody:   noDeleteEverything,
			Want:         Want{CheckCalls: 1, Counters: []string{"mcp_gateway_tools_list_refused"}},
		},
		{
			Name: "RedTeamToolListOnAnEventStreamGETWithAnotherMediaTypeIsRefused", RedTeam: true,
			Request:      getSSE,
			Response:     [][2]string{{":status", "200"}, {"content-type", "application/octet-stream"}},
			ResponseBody: []string{"id: 2\ndata: " + listTools("77", "") + "\n\n"},
			ClientBody:   noDeleteEverything,
			Want:         Want{CheckCalls: 1, Counters: []string{"mcp_gateway_tools_list_refused"}},
		},
	}
}
