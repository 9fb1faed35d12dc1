package plugintest

// Cases of MCP revision 2026-07-28 on an MCP server route: the request metadata headers
// (MCP-Protocol-Version, Mcp-Method, Mcp-Name) are checked against the body before policy
// (400 with JSON-RPC error -32020 otherwise), the records carry the revision and the client,
// and a denied tool call is answered as a result the client hands to its model.

const (
	v2026 = "2026-07-28"
	v2025 = "2025-11-25"
)

// meta2026 is the _meta of a 2026-07-28 request from the client "matrix-client" 2.4.0.
const meta2026 = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"matrix-client","version":"2.4.0"},"io.modelcontextprotocol/clientCapabilities":{}}`

// call2026 is a 2026-07-28 tools/call of tool.
func call2026(id, tool string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":{"text":"hi"},` + meta2026 + `}}`
}

// list2026 is a 2026-07-28 tools/list.
const list2026 = `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{` + meta2026 + `}}`

// mcpHeaders are request metadata headers: version, method and name ("" leaves one out).
func mcpHeaders(version, method, name string) [][2]string {
	var hs [][2]string
	if version != "" {
		hs = append(hs, [2]string{"mcp-protocol-version", version})
	}
	if method != "" {
		hs = append(hs, [2]string{"mcp-method", method})
	}
	if name != "" {
		hs = append(hs, [2]string{"mcp-name", name})
	}
	return hs
}

func mcp2026Cases() []Case {
	mcp := "mcp.example.com"
	alice := bearer(TokenAlice)
	with := func(body string, hs ...[2]string) Request {
		return post(mcp, "/mcp", body, append([][2]string{alice}, hs...)...)
	}
	// mismatch: a request refused for its headers, never forwarded, recorded and counted.
	mismatch := func(name string, req Request, problem string) Case {
		return Case{Name: name, Request: req, Want: Want{
			Status:       400,
			BodyContains: []string{`"code":-32020`, `"message":"Header mismatch: ` + problem, `"request-id":"` + RequestID + `"`},
			LogContains:  []string{`"allow":false`, `"allow-why-false":["mcp-header-mismatch"]`},
			Counters:     []string{"mcp_gateway_request_rejected", "mcp_gateway_deny_reason_mcp_header_mismatch"},
			CheckCalls:   1,
		}}
	}
	return append([]Case{
		{
			Name:    "MCP20260728ToolCallWithMatchingHeadersIsForwardedAndRecorded",
			Request: with(call2026("1", "echo"), mcpHeaders(v2026, "tools/call", "echo")...),
			Want: Want{
				Upstream: map[string]string{"mcp-method": "tools/call", "mcp-name": "echo", "mcp-protocol-version": v2026, "authorization": ""},
				LogContains: []string{`"allow":true`, `"mcp-tool":"echo"`, `"mcp-protocol-version":"2026-07-28"`,
					`"mcp-client-name":"matrix-client"`, `"mcp-client-version":"2.4.0"`},
				CheckCalls: 1,
			},
		},
		{
			Name:    "MCP20260728ListWithMethodHeaderIsForwarded",
			Request: with(list2026, mcpHeaders(v2026, "tools/list", "")...),
			Want:    Want{Upstream: map[string]string{"mcp-method": "tools/list"}, LogContains: []string{`"mcp-method":"tools/list"`, `"mcp-protocol-version":"2026-07-28"`}, CheckCalls: 1},
		},
		{
			Name: "MCP20260728Base64NameIsDecodedBeforeComparing",
			Request: with(`{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"file:///ü.txt",`+meta2026+`}}`,
				mcpHeaders(v2026, "resources/read", "=?base64?ZmlsZTovLy/DvC50eHQ=?=")...),
			Want: Want{Upstream: map[string]string{"mcp-name": "=?base64?ZmlsZTovLy/DvC50eHQ=?="}, CheckCalls: 1},
		},
		{
			Name:    "MCP20251125InitializeRecordsTheClient",
			Request: with(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"legacy-client","version":"1.32.2"}}}`),
			Want: Want{LogContains: []string{`"mcp-method":"initialize"`, `"mcp-protocol-version":"2025-11-25"`, `"mcp-client-name":"legacy-client"`, `"mcp-client-version":"1.32.2"`},
				CheckCalls: 1},
		},
		{
			Name:    "MCP20251125RequestNeedsNoMethodHeaderAndRecordsTheVersionHeader",
			Request: with(toolsCall("4", "echo"), mcpHeaders(v2025, "", "")...),
			Want:    Want{LogContains: []string{`"mcp-tool":"echo"`, `"mcp-protocol-version":"2025-11-25"`, `"mcp-client-name":""`}, CheckCalls: 1},
		},
		func() Case {
			// List results of 2026-07-28 carry ttlMs and cacheScope: they reach the client as
			// the server sent them, as JSON and as an event stream.
			list := `{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"echo","inputSchema":{"type":"object"}}],"ttlMs":60000,"cacheScope":"user","resultType":"complete"}}`
			return Case{
				Name:     "MCP20260728ListResultKeepsTTLAndCacheScope",
				Request:  with(list2026, mcpHeaders(v2026, "tools/list", "")...),
				Want:     Want{CheckCalls: 1},
				Response: [][2]string{{":status", "200"}, {"content-type", "application/json"}}, ResponseBody: []string{list},
				ClientBody: func(body string) string {
					if body != list {
						return "the list result changed on its way to the client"
					}
					return ""
				},
			}
		}(),
		{
			// The server answers an unknown version (UnsupportedProtocolVersion, -32022).
			Name:    "UnknownVersionIsLeftToTheServer",
			Request: with(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"DRAFT-2099"}}}`, mcpHeaders("DRAFT-2099", "tools/list", "")...),
			Want:    Want{Upstream: map[string]string{"mcp-protocol-version": "DRAFT-2099"}, CheckCalls: 1},
		},
		{
			Name:    "MCP20260728DeniedToolGetsACompleteIsErrorResult",
			Request: with(call2026(`"c-1"`, "delete_everything"), mcpHeaders(v2026, "tools/call", "delete_everything")...),
			Want: Want{Status: 200, Golden: "mcp2026-denied-tool.txt",
				LogContains: []string{`"allow":false`, `"mcp-tool":"delete_everything"`, `"mcp-protocol-version":"2026-07-28"`, `"mcp-client-name":"matrix-client"`},
				Counters:    []string{"mcp_gateway_authorize_denied", "mcp_gateway_deny_reason_mcp_tool_unauthorized"}, CheckCalls: 1},
		},
		{
			Name: "DeniedToolForAClientAcceptingOnlyEventStreamsGetsOneEvent",
			Request: with(call2026("5", "delete_everything"), append(mcpHeaders(v2026, "tools/call", "delete_everything"),
				[2]string{"accept", "text/event-stream"})...),
			Want: Want{Status: 200, Golden: "denied-tool-event-stream.txt", CheckCalls: 1},
		},
		{
			Name:    "DeniedToolForAClientAcceptingJSONAndEventStreamsGetsJSON",
			Request: with(toolsCall("6", "delete_everything"), [2]string{"accept", "application/json, text/event-stream"}),
			Want:    Want{Status: 200, ReplyHeaders: map[string]string{"content-type": "application/json"}, BodyContains: []string{`"isError":true`}, CheckCalls: 1},
		},
		{
			Name:    "DeniedNonToolRequestStays403",
			Request: post(mcp, "/mcp", list2026, append([][2]string{bearer(TokenBob)}, mcpHeaders(v2026, "tools/list", "")...)...),
			Want:    Want{Status: 403, BodyContains: []string{`"code":-32001`}, CheckCalls: 1},
		},
		{
			Name:    "BatchAnswersEveryRequestAndForwardsNothing",
			Request: with(`[` + toolsCall("1", "echo") + `,` + toolsCall(`"x"`, "delete_everything") + `,` + toolsList + `]`),
			Want: Want{Status: 200, Golden: "batch-one-denied.txt",
				LogContains: []string{`"allow":true,"allow-why-true":["domain-ok","mcp-tool-ok"],"allow-why-false":[],"deny":false,"deny-why-false":["mcp-tool-ok"],"mcp-method":"tools/call","mcp-tool":"echo"`,
					`"allow":false,"allow-why-true":["domain-ok"],"allow-why-false":["mcp-tool-unauthorized"],"deny":true,"deny-why-false":[],"mcp-method":"tools/call","mcp-tool":"delete_everything"`},
				Counters: []string{"mcp_gateway_authorize_denied"}, CheckCalls: 1},
		},
		{
			Name:    "BatchWithADeniedNonToolRequestIs403",
			Request: post(mcp, "/mcp", `[`+toolsList+`,{"jsonrpc":"2.0","id":9,"method":"tools/list"}]`, bearer(TokenBob)),
			Want:    Want{Status: 403, BodyContains: []string{`"id":2,"error":{"code":-32001`, `"id":9,"error":{"code":-32001`}, CheckCalls: 1},
		},
	}, attacks([]Case{
		func() Case {
			c := mismatch("MethodHeaderNamingAnotherMethodIsRefused", with(call2026("1", "delete_everything"), mcpHeaders(v2026, "tools/list", "delete_everything")...), "Mcp-Method header does not match the body")
			c.Want.Golden = "mcp-header-mismatch.txt"
			return c
		}(),
		mismatch("NameHeaderNamingAnAllowedToolIsRefused", with(call2026("1", "delete_everything"), mcpHeaders(v2026, "tools/call", "echo")...), "Mcp-Name header does not match the body"),
		mismatch("NameHeaderNamingADeniedToolIsRefusedToo", with(call2026("1", "echo"), mcpHeaders(v2026, "tools/call", "delete_everything")...), "Mcp-Name header does not match the body"),
		mismatch("MissingMethodHeaderOn20260728IsRefused", with(call2026("1", "echo"), mcpHeaders(v2026, "", "echo")...), "Mcp-Method header missing"),
		mismatch("MissingNameHeaderOn20260728IsRefused", with(call2026("1", "echo"), mcpHeaders(v2026, "tools/call", "")...), "Mcp-Name header missing"),
		mismatch("MissingVersionHeaderWhenTheBodySays20260728IsRefused", with(call2026("1", "echo"), mcpHeaders("", "tools/call", "echo")...), "MCP-Protocol-Version header missing"),
		mismatch("VersionHeaderDisagreeingWithTheBodyIsRefused", with(call2026("1", "echo"), mcpHeaders(v2025, "tools/call", "echo")...), "MCP-Protocol-Version header does not match the body"),
		mismatch("MalformedVersionHeaderIsRefused", with(toolsCall("1", "echo"), mcpHeaders("2026-07-28\x7f", "", "")...), "MCP-Protocol-Version header is malformed"),
		mismatch("DuplicatedMethodHeaderIsRefused", with(call2026("1", "echo"), append(mcpHeaders(v2026, "tools/call", "echo"), [2]string{"mcp-method", "tools/call"})...), "Mcp-Method header given more than once"),
		mismatch("UnderscoreSpellingOfMethodHeaderCountsAsASecondOne", with(call2026("1", "echo"), append(mcpHeaders(v2026, "tools/call", "echo"), [2]string{"mcp_method", "tools/list"})...), "Mcp-Method header given more than once"),
		mismatch("DuplicatedNameHeaderIsRefused", with(call2026("1", "echo"), append(mcpHeaders(v2026, "tools/call", "echo"), [2]string{"mcp-name", "delete_everything"})...), "Mcp-Name header given more than once"),
		mismatch("MalformedBase64NameIsRefused", with(call2026("1", "echo"), mcpHeaders(v2026, "tools/call", "=?base64?ZWNobw?=")...), "Mcp-Name header is malformed"),
		mismatch("Base64NameOfAnotherToolIsRefused", with(call2026("1", "delete_everything"), mcpHeaders(v2026, "tools/call", "=?base64?ZWNobw==?=")...), "Mcp-Name header does not match the body"),
		mismatch("NameHeaderOnARequestNamingNothingIsRefused", with(list2026, mcpHeaders(v2026, "tools/list", "echo")...), "Mcp-Name header on a request that names no tool"),
		mismatch("MethodHeaderOnABatchIsRefused", with(`[`+toolsCall("1", "echo")+`,`+deniedCall+`]`, mcpHeaders("", "tools/call", "")...), "Mcp-Method and Mcp-Name headers cannot describe a batch"),
		mismatch("BatchOn20260728IsRefused", with(`[`+toolsCall("1", "echo")+`]`, mcpHeaders(v2026, "", "")...), "batches are not part of protocol version 2026-07-28"),
		mismatch("MismatchedMethodHeaderOn20251125IsRefusedToo", with(deniedCall, mcpHeaders(v2025, "tools/list", "")...), "Mcp-Method header does not match the body"),
		mismatch("AmbiguousMetaVersionIsRefused", with(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, mcpHeaders(v2025, "tools/list", "")...), "_meta protocol version is ambiguous"),
	})...)
}
