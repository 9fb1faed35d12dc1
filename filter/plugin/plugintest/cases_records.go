package plugintest

import "strings"

// Cases of records, counters and properties: every decision and every refusal leaves an
// authorization record (with the decision, whatever authorize_log_fields lists), a counter
// named after its reason, and the decision as stream properties for the access log.

// recordCases are the cases of what a decided or refused request leaves behind.
func recordCases() []Case {
	mcp := "mcp.example.com"
	alice := bearer(TokenAlice)
	// refused is a refusal with its status, reason and mcp-method; user is "" before the
	// credential is verified, anyUser when that depends on the mode.
	const anyUser = "?"
	refused := func(name string, req Request, status int, reason, method, user string, calls int) Case {
		c := Case{Name: name, Request: req, Want: Want{
			Status: status,
			LogContains: []string{`"request-id":"` + RequestID + `"`, `"allow":false`,
				`"allow-why-false":["` + reason + `"]`, `"mcp-method":"` + method + `"`},
			Counters: []string{"mcp_gateway_deny_reason_" + strings.ReplaceAll(reason, "-", "_")},
			Properties: map[string]string{"mcp_gateway.allow": "false", "mcp_gateway.reasons": reason,
				"mcp_gateway.mcp_method": method, "mcp_gateway.request_id": RequestID},
			CheckCalls: calls,
		}}
		if user != anyUser {
			c.Want.LogContains = append(c.Want.LogContains, `"user":"`+user+`"`)
			c.Want.Properties["mcp_gateway.user"] = user
		}
		return c
	}
	return []Case{
		refused("MissingTokenIsRecordedAsTokenMissing", post(mcp, "/mcp", toolsList), 401, "token-missing", "POST", "", 0),
		refused("MalformedTokenIsRecordedAsTokenMissing", get(mcp, "/mcp", [2]string{"authorization", "Basic YTpi"}), 401, "token-missing", "GET", "", 0),
		refused("InvalidTokenIsRecordedAsTokenInvalid", post(mcp, "/mcp", toolsList, bearer(TokenInvalid)), 401, "token-invalid", "POST", "", 1),
		refused("BrowserWithoutSessionIsRecordedAsTokenMissing", get("app.example.com", "/"), 401, "token-missing", "GET", "", 0),
		refused("DeclaredBodyOverLimitIsRecordedAsBodyTooLarge",
			Request{Method: "POST", Authority: "tiny.example.com", Path: "/mcp", Headers: [][2]string{jsonCT, alice, {"content-length", "101"}}, Chunks: []string{strings.Repeat(" ", 101)}},
			413, "body-too-large", "POST", "", 0),
		refused("UnparsableBodyIsRecordedAsBodyUnparsable", post(mcp, "/mcp", `{"jsonrpc":"2.0",`, alice), 400, "body-unparsable", "POST", anyUser, -1),
		refused("NotJSONIsRecordedAsContentTypeUnsupported", Request{Method: "POST", Authority: mcp, Path: "/mcp", Headers: [][2]string{{"content-type", "text/plain"}, alice}, Chunks: []string{toolsList}},
			415, "mcp-content-type-unsupported", "POST", "", 0),
		refused("NoRouteIsRecordedAsRouteNotFound", post(SharedHost, "/mcp/../x", toolsList, alice), 400, "request-ambiguous", "POST", "", 0),
		refused("UnknownPathIsRecordedAsRouteNotFound", get("tiny.example.com", "/other", alice), 404, "route-not-found", "GET", "", 0),
		refused("TokenServiceDownIsRecordedAsUnavailable", post(mcp, "/mcp", toolsList, bearer(TokenServiceDown)), 503, "token-service-unavailable", "POST", "", 1),
		refused("TokenServiceGarbageIsRecordedAsUnavailable", get(mcp, "/mcp", bearer(TokenGarbage)), 503, "token-service-unavailable", "GET", "", 1),
		refused("UpstreamNotConnectedIsRecorded", post("up.example.com", "/mcp", toolsList, bearer(TokenNoUpstream)), 401, "upstream-authorization-required", "POST", "", 1),
		refused("SecondSessionHeaderIsRecordedAsAmbiguous", get(mcp, "/mcp", alice, [2]string{"mcp-session-id", "a"}, [2]string{"mcp-session-id", "b"}), 400, "request-ambiguous", "GET", "alice", 1),
		{
			Name: "TraceContextGoesOnTheCheckCall",
			Request: post(mcp, "/mcp", toolsList, alice, [2]string{"traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
				[2]string{"tracestate", "vendor=opaque"}),
			Want: Want{Upstream: map[string]string{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
				CheckHeaders: map[string]string{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "tracestate": "vendor=opaque", "x-request-id": RequestID},
				CheckCalls:   1},
		},
		{
			Name:    "NoTraceContextNoTraceHeaders",
			Request: post(mcp, "/mcp", toolsList, alice),
			Want:    Want{Upstream: map[string]string{"authorization": ""}, CheckHeaders: map[string]string{"traceparent": "", "tracestate": ""}, CheckCalls: 1},
		},
		{
			Name:    "DeniedToolPublishesTheDecision",
			Request: DeniedToolCall(),
			Want: Want{Status: 200, Counters: []string{"mcp_gateway_authorize_denied", "mcp_gateway_deny_reason_mcp_tool_unauthorized"},
				Properties: map[string]string{"mcp_gateway.mcp_method": "tools/call", "mcp_gateway.mcp_tool": "delete_everything", "mcp_gateway.allow": "false",
					"mcp_gateway.reasons": "mcp-tool-unauthorized", "mcp_gateway.user": "alice", "mcp_gateway.request_id": RequestID},
				CheckCalls: 1},
		},
		{
			Name:    "AllowedToolPublishesTheDecision",
			Request: AllowedToolCall(),
			Want: Want{Upstream: map[string]string{"authorization": ""}, Counters: []string{"mcp_gateway_authorize_allowed"},
				Properties: map[string]string{"mcp_gateway.mcp_method": "tools/call", "mcp_gateway.mcp_tool": "echo", "mcp_gateway.allow": "true",
					"mcp_gateway.reasons": "domain-ok,mcp-tool-ok", "mcp_gateway.user": "alice"},
				CheckCalls: 1},
		},
		{
			Name:    "BatchPublishesItsDeniedMessage",
			Request: post(mcp, "/mcp", `[`+toolsCall("1", "echo")+`,`+toolsCall("2", "shutdown")+`,`+toolsList+`]`, alice),
			Want: Want{Status: 200, Properties: map[string]string{"mcp_gateway.mcp_tool": "shutdown", "mcp_gateway.allow": "false"},
				CheckCalls: 1},
		},
		{
			Name:    "SecretsInToolArgumentsAreRedacted",
			Request: post(mcp, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi","auth":{"Password":"hunter2","api_key":["k1"]}}}}`, alice),
			Want: Want{Upstream: map[string]string{"authorization": ""},
				LogContains:    []string{`"mcp-tool-parameters":{"text":"hi","auth":{"Password":"[redacted]","api_key":"[redacted]"}}`},
				LogNotContains: []string{"hunter2", "k1"}, CheckCalls: 1},
		},
		{
			Name:    "LargeToolArgumentsAreCutToAMarker",
			Request: post(mcp, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"`+strings.Repeat("y", MaxParameterBytes)+`","more":"`+strings.Repeat("z", 200)+`"}}}`, alice),
			Want: Want{Upstream: map[string]string{"authorization": ""},
				LogContains: []string{`"mcp-tool-parameters":{"[truncated]":true,"bytes":1245}`}, LogNotContains: []string{"yyyy"}, CheckCalls: 1},
		},
	}
}
