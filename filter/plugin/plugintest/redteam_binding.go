package plugintest

import "strings"

// Red-team attacks on what binds a request to the reading and the user the filter decided on:
// the body's character set (an upstream that honours charset=utf-7 reads another tool than
// the filter did) and MCP session IDs (one user's session used with another user's token).

// utf7Smuggle is an allowed echo call to the filter, but a call of delete_everything to an
// upstream that decodes the body as UTF-7: "+ACI-" is a quote there, so the argument closes
// and a second params follows, which JSON.parse keeps (the last duplicate wins).
const utf7Smuggle = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` +
	`+ACI-}},+ACI-params+ACI-:{+ACI-name+ACI-:+ACI-delete_everything+ACI-,+ACI-arguments+ACI-:{+ACI-text+ACI-:+ACI-` + `"}}}`

func charsetCases() []RedTeamCase {
	mcp := "mcp.example.com"
	alice := bearer(TokenAlice)
	withCT := func(host, body string, cts ...string) Request {
		r := Request{Method: "POST", Authority: host, Path: "/mcp", Chunks: []string{body}}
		for _, ct := range cts {
			r.Headers = append(r.Headers, [2]string{"content-type", ct})
		}
		r.Headers = append(r.Headers, alice)
		return r
	}
	refusedRecord := []string{`"user":"alice"`, `"allow":false`, `"allow-why-false":["mcp-content-type-unsupported"]`}
	cases := []RedTeamCase{
		{Scenario: Scenario{Name: "UTF7QuotesInAnAllowedCallCannotNameADeniedTool",
			Request: withCT(mcp, utf7Smuggle, "application/json; charset=utf-7"),
			Want:    Want{Status: 415, BodyContains: []string{"unsupported_media_type"}, LogContains: refusedRecord, LogNotContains: []string{`"mcp-tool":"echo"`}, CheckCalls: 1}}},
		{Scenario: Scenario{Name: "UTF7ToolNameOnADenyListRouteGets415",
			Request: withCT(OpenHost, strings.Replace(toolsCall("1", "delete_everything"), "_", "+AF8-", 1), "application/json; charset=utf-7"),
			Want:    Want{Status: 415, CheckCalls: 1}}},
	}
	// Each of these reaches an upstream that honours it as something else than UTF-8 JSON, or
	// is not one well-formed charset=utf-8; the body is an allowed call, so only the
	// Content-Type refuses it.
	echo := toolsCall("1", "echo")
	for i, ct := range [][]string{
		{"application/json; charset=utf-7"},
		{"application/json;charset=UTF-7"},
		{`application/json; charset="utf-7"`},
		{"application/json; charset=utf-16le"},
		{"application/json; charset=utf-16"},
		{"application/json; charset=iso-8859-1"},
		{"application/json; charset=shift_jis"},
		{"application/json; charset=utf8"},
		{"application/json; charset=utf-8; charset=utf-7"},
		{"application/json; charset=utf-7; charset=utf-8"},
		{"application/json; charset=utf-8;x=y"},
		{"application/json; x=y"},
		{"application/json;"},
		{"application/json; charset="},
		{"application/json; charset = utf-8"},
		{`application/json; charset="utf-8`},
		{"application/json; charset=utf-8, text/plain"},
		{"application/json", "application/json; charset=utf-7"},
		{"application/json; charset=utf-7", "application/json"},
	} {
		cases = append(cases, RedTeamCase{Scenario: Scenario{
			Name:    "UnsupportedContentTypeGets415/" + string(rune('a'+i)) + "/" + strings.Join(ct, "+"),
			Request: withCT(OpenHost, echo, ct...),
			Want:    Want{Status: 415, CheckCalls: 1},
		}})
	}
	for i, ct := range []string{
		"application/json",
		"application/json; charset=utf-8",
		"application/json;charset=UTF-8",
		`application/json; charset="utf-8"`,
		"Application/JSON ; Charset=Utf-8",
		"application/json\t;\tcharset=utf-8",
	} {
		cases = append(cases, RedTeamCase{Scenario: Scenario{
			Name:    "UTF8JSONIsForwarded/" + string(rune('a'+i)) + "/" + ct,
			Request: withCT(OpenHost, echo, ct),
			Want:    Want{Upstream: map[string]string{"authorization": ""}, LogContains: []string{`"mcp-tool":"echo"`, `"allow":true`}, CheckCalls: 1},
		}})
	}
	return cases
}

// upstreamSession is the MCP session ID the upstream hands out in sessionCases.
const upstreamSession = "up-session-1"

func sessionCases() []RedTeamCase {
	alice, bob := bearer(TokenAlice), bearer(TokenBob)
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	opened := [][2]string{{":status", "200"}, {"content-type", "application/json"}, {"mcp-session-id", upstreamSession}}
	open := []Request{post(OpenHost, "/mcp", initialize, alice)}
	session := [2]string{"mcp-session-id", SessionPlaceholder}
	stream := func(method string, headers ...[2]string) Request {
		return Request{Method: method, Authority: OpenHost, Path: "/mcp", Headers: append([][2]string{{"accept", "text/event-stream"}}, headers...)}
	}
	// Check calls: alice's bundle on /mcp is cached by the Before request; other users, tokens
	// and routes need a call of their own.
	notFound := func(user string, calls int) Want {
		return Want{Status: 404, BodyContains: []string{"Session not found", `"request-id":"` + RequestID + `"`},
			LogContains: []string{`"user":"` + user + `"`, `"allow":false`, `"allow-why-false":["mcp-session-unknown"]`}, CheckCalls: calls}
	}
	hijack := func(name string, req Request, user string, calls int) RedTeamCase {
		return RedTeamCase{Scenario: Scenario{Name: name, Request: req, Want: notFound(user, calls)}, Before: open, BeforeResponse: opened}
	}
	restored := func(calls int) Want {
		return Want{Upstream: map[string]string{"mcp-session-id": upstreamSession, "authorization": ""}, CheckCalls: calls}
	}
	return []RedTeamCase{
		{
			Scenario: Scenario{Name: "UpstreamSessionIDReachesTheClientBoundToItsUser", Request: post(OpenHost, "/mcp", initialize, alice), Want: Want{CheckCalls: 1}},
			Response: opened,
			ClientResponse: func(h map[string]string) string {
				if id := h["mcp-session-id"]; id == "" || id == upstreamSession {
					return "the client must get a session ID, and not the upstream's own"
				}
				return ""
			},
		},
		{
			Scenario: Scenario{Name: "OwnSessionReachesTheUpstreamAsItsOwnID", Request: post(OpenHost, "/mcp", toolsList, alice, session), Want: restored(0)},
			Before:   open, BeforeResponse: opened,
		},
		{
			// The format of docs/decisions.md, computed apart from the filter (BoundSession).
			Scenario: Scenario{Name: "SessionIDInTheDocumentedFormatIsAccepted", Request: post(OpenHost, "/mcp", toolsList, alice,
				[2]string{"mcp-session-id", BoundSession("alice", "https://"+OpenHost+"/mcp", upstreamSession)}), Want: restored(1)},
		},
		{
			Scenario: Scenario{Name: "OwnSessionWorksWithARefreshedToken", Request: post(OpenHost, "/mcp", toolsList, bearer(TokenAlice2), session), Want: restored(1)},
			Before:   open, BeforeResponse: opened,
		},
		{
			Scenario: Scenario{Name: "OwnSessionStreamWithLastEventIDReachesTheUpstream", Request: stream("GET", alice, session, [2]string{"last-event-id", "ev-3"}),
				Want: Want{Upstream: map[string]string{"mcp-session-id": upstreamSession, "last-event-id": "ev-3"}, CheckCalls: 0}},
			Before: open, BeforeResponse: opened,
		},
		hijack("AnotherUsersSessionCannotCallTools", post(OpenHost, "/mcp", toolsCall("1", "echo"), bob, session), "bob", 1),
		hijack("AnotherUsersSessionStreamCannotBeTaken", stream("GET", bob, session), "bob", 1),
		hijack("AnotherUsersSessionStreamCannotBeResumed", stream("GET", bob, session, [2]string{"last-event-id", "ev-3"}), "bob", 1),
		hijack("AnotherUsersSessionCannotBeDeleted", stream("DELETE", bob, session), "bob", 1),
		hijack("RawUpstreamSessionIDIsNotFound", post(OpenHost, "/mcp", toolsList, alice, [2]string{"mcp-session-id", upstreamSession}), "alice", 0),
		hijack("ForgedTagIsNotFound", post(OpenHost, "/mcp", toolsList, alice, [2]string{"mcp-session-id", strings.Repeat("A", 22) + "." + upstreamSession}), "alice", 0),
		hijack("SessionOfAnotherRouteIsNotFound", post(OpenHost, "/other", toolsList, alice, session), "alice", 1),
		{
			Scenario: Scenario{Name: "TwoSessionHeadersAreRefused", Request: post(OpenHost, "/mcp", toolsList, alice, session, [2]string{"mcp-session-id", upstreamSession}),
				Want: Want{Status: 400, CheckCalls: 0}},
			Before: open, BeforeResponse: opened,
		},
		{
			Scenario: Scenario{Name: "SessionIDWithoutASessionKeyIsNotFound", Request: post(OpenHost, "/mcp", toolsList, alice, [2]string{"mcp-session-id", upstreamSession}),
				Want: Want{Status: 404, CheckCalls: 1}},
			Answer: okAnswer(aliceIdentity + anAssertion),
		},
		{
			Scenario: Scenario{Name: "UpstreamSessionIDIsWithheldWithoutASessionKey", Request: post(OpenHost, "/mcp", initialize, alice), Want: Want{CheckCalls: 1}},
			Answer:   okAnswer(aliceIdentity + anAssertion),
			Response: opened,
			ClientResponse: func(h map[string]string) string {
				if _, ok := h["mcp-session-id"]; ok {
					return "a session ID the gateway cannot bind must not reach the client"
				}
				return ""
			},
		},
		{
			Scenario: Scenario{Name: "MalformedSessionKeyFailsClosed", Request: post(OpenHost, "/mcp", toolsList, alice), Want: Want{Status: 503, CheckCalls: 1}},
			Answer:   okAnswer(aliceIdentity + anAssertion + `,"session_key":"short"`),
		},
	}
}
