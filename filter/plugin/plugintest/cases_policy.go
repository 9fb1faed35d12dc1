package plugintest

// Cases of policy: which tool calls and other MCP requests a route's policy allows, what a
// denial looks like, and what the authorization record says.

// policyCases are the cases of policy decisions and their records.
func policyCases() []Case {
	mcp := "mcp.example.com"
	alice := bearer(TokenAlice)
	return append([]Case{
		{
			Name:    "AllowedToolIsForwardedWithAssertionAndWithoutTheExternalToken",
			Request: AllowedToolCall(),
			Want: Want{
				Upstream: map[string]string{"authorization": "", "x-gateway-assertion": AssertionForPrefix + mcp},
				LogContains: []string{`"message":"authorize check"`, `"service":"authorize"`, `"request-id":"` + RequestID + `"`, `"user":"alice"`,
					`"email":"alice@example.com"`, `"allow":true`, `"mcp-method":"tools/call"`, `"mcp-tool":"echo"`, `"mcp-tool-parameters":{"text":"hi"}`, `"mcp-tool-ok"`, `"domain-ok"`},
				LogNotContains: []string{TokenAlice},
				CheckCalls:     1,
			},
		},
		{
			Name:    "DeniedToolGetsAnIsErrorResultNamingToolRouteReasonsAndRequestID",
			Request: DeniedToolCall(),
			Want: Want{
				Status: 200,
				BodyContains: []string{`"id":"call-9"`, `"result":{"content":[{"type":"text","text":"Denied by the MCP gateway: the policy of route \"mcp.example.com\" does not allow the tool \"delete_everything\" (reasons: mcp-tool-unauthorized; request ID ` + RequestID + `)`,
					`"isError":true`, `"request-id":"` + RequestID + `"`},
				ReplyHeaders: map[string]string{"content-type": "application/json"},
				LogContains:  []string{`"allow":false`, `"mcp-tool":"delete_everything"`, `"allow-why-false":["mcp-tool-unauthorized"]`, `"deny":true`},
				CheckCalls:   1,
			},
		},
		{
			Name:    "NonToolRequestPassesMCPToolDenyRule",
			Request: post(mcp, "/mcp", toolsList, bearer(TokenAlice)),
			Want:    Want{Upstream: map[string]string{"authorization": ""}, LogContains: []string{`"allow":true`, `"mcp-method":"tools/list"`, `"mcp-tool-not-a-tool-call"`}, CheckCalls: 1},
		},
		{
			Name:    "OtherDomainIsDenied",
			Request: post(mcp, "/mcp", toolsList, bearer(TokenBob)),
			Want:    Want{Status: 403, LogContains: []string{`"allow":false`, `"domain-unauthorized"`}, CheckCalls: 1},
		},
		{
			Name:    "SSEGetIsForwardedAsNonToolRequest",
			Request: Request{Method: "GET", Authority: mcp, Path: "/mcp", Headers: [][2]string{bearer(TokenAlice), {"accept", "text/event-stream"}}},
			Want:    Want{Upstream: map[string]string{"authorization": ""}, LogContains: []string{`"mcp-method":"GET"`}, Properties: map[string]string{"mcp_gateway.mcp_method": "GET", "mcp_gateway.allow": "true"}, CheckCalls: 1},
		},
		{
			Name:    "MCPToolOnlyUnderAllowFailsNonToolRequests",
			Request: post("pitfall.example.com", "/mcp", toolsList, bearer(TokenAlice)),
			Want:    Want{Status: 403, LogContains: []string{`"mcp-tool-not-a-tool-call"`}, CheckCalls: 1},
		},
		{
			Name:    "MCPToolOnlyUnderAllowPermitsTheTool",
			Request: post("pitfall.example.com", "/mcp", toolsCall("1", "echo"), bearer(TokenAlice)),
			Want:    Want{Upstream: map[string]string{"authorization": ""}, CheckCalls: 1},
		},
	}, attacks([]Case{
		{
			Name: "ToolArgumentsCannotForgeALogLine", Request: post(mcp, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"a":[`+"\n"+`{"level":"info","forged":true}`+"\n"+`]}}}`, alice),
			Want: Want{Upstream: map[string]string{"authorization": ""}, LogContains: []string{`"mcp-tool-parameters":{"a":[{"level":"info","forged":true}]}`},
				LogNotContains: []string{"\n{\"level\":\"info\",\"forged\""}, CheckCalls: 1},
		},
	})...)
}

// AllowedToolCall is alice's call of echo on mcp.example.com with a forged assertion header:
// forwarded, with the gateway's assertion instead (tests of the decision cache repeat it).
func AllowedToolCall() Request {
	return post("mcp.example.com", "/mcp", toolsCall("1", "echo"), bearer(TokenAlice), [2]string{"x-gateway-assertion", "forged"})
}

// DeniedToolCall is alice's call of delete_everything on mcp.example.com: denied with 403.
func DeniedToolCall() Request {
	return post("mcp.example.com", "/mcp", toolsCall(`"call-9"`, "delete_everything"), bearer(TokenAlice))
}
