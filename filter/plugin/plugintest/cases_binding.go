package plugintest

import "strings"

// Cases of MCP session binding: session IDs are bound to their user and route (see
// docs/decisions.md), so one user's session cannot be used with another user's token, on
// another route, or forged.

// upstreamSession is the MCP session ID the upstream hands out in sessionCases.
const upstreamSession = "up-session-1"

// bindingCases are the attacks on MCP session binding.
func bindingCases() []Case {
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
	hijack := func(name string, req Request, user string, calls int) Case {
		return Case{Name: name, Request: req, Want: notFound(user, calls), Before: open, BeforeResponse: opened}
	}
	restored := func(calls int) Want {
		return Want{Upstream: map[string]string{"mcp-session-id": upstreamSession, "authorization": ""}, CheckCalls: calls}
	}
	return attacks([]Case{
		{
			Name: "UpstreamSessionIDReachesTheClientBoundToItsUser", Request: post(OpenHost, "/mcp", initialize, alice), Want: Want{CheckCalls: 1},
			Response: opened,
			ClientResponse: func(h Headers) string {
				if id, _ := h.Get("mcp-session-id"); id == "" || id == upstreamSession {
					return "the client must get a session ID, and not the upstream's own"
				}
				return ""
			},
		},
		{
			Name: "OwnSessionReachesTheUpstreamAsItsOwnID", Request: post(OpenHost, "/mcp", toolsList, alice, session), Want: restored(0),
			Before: open, BeforeResponse: opened,
		},
		{
			// The format of docs/decisions.md, computed apart from the filter (BoundSession).
			Name: "SessionIDInTheDocumentedFormatIsAccepted", Request: post(OpenHost, "/mcp", toolsList, alice,
				[2]string{"mcp-session-id", BoundSession("alice", "https://"+OpenHost+"/mcp", upstreamSession)}), Want: restored(1),
		},
		{
			Name: "OwnSessionWorksWithARefreshedToken", Request: post(OpenHost, "/mcp", toolsList, bearer(TokenAlice2), session), Want: restored(1),
			Before: open, BeforeResponse: opened,
		},
		{
			Name: "OwnSessionStreamWithLastEventIDReachesTheUpstream", Request: stream("GET", alice, session, [2]string{"last-event-id", "ev-3"}),
			Want:   Want{Upstream: map[string]string{"mcp-session-id": upstreamSession, "last-event-id": "ev-3"}, CheckCalls: 0},
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
			Name: "TwoSessionHeadersAreRefused", Request: post(OpenHost, "/mcp", toolsList, alice, session, [2]string{"mcp-session-id", upstreamSession}),
			Want:   Want{Status: 400, CheckCalls: 0},
			Before: open, BeforeResponse: opened,
		},
		{
			Name: "SessionIDWithoutASessionKeyIsNotFound", Request: post(OpenHost, "/mcp", toolsList, alice, [2]string{"mcp-session-id", upstreamSession}),
			Want:   Want{Status: 404, CheckCalls: 1},
			Answer: okAnswer(aliceIdentity + anAssertion),
		},
		{
			Name: "UpstreamSessionIDIsWithheldWithoutASessionKey", Request: post(OpenHost, "/mcp", initialize, alice), Want: Want{CheckCalls: 1},
			Answer:   okAnswer(aliceIdentity + anAssertion),
			Response: opened,
			ClientResponse: func(h Headers) string {
				if _, ok := h.Get("mcp-session-id"); ok {
					return "a session ID the gateway cannot bind must not reach the client"
				}
				return ""
			},
		},
		{
			Name: "MalformedSessionKeyFailsClosed", Request: post(OpenHost, "/mcp", toolsList, alice), Want: Want{Status: 503, CheckCalls: 1},
			Answer: okAnswer(aliceIdentity + anAssertion + `,"session_key":"short"`),
		},
	})
}

// legacySessionCases: the legacy HTTP+SSE transport names its session in the query of the URL
// its endpoint event gives; the filter binds it as it binds Mcp-Session-Id.
func legacySessionCases() []Case {
	alice, bob := bearer(TokenAlice), bearer(TokenBob)
	sse := func(headers ...[2]string) Request {
		return Request{Method: "GET", Authority: OpenHost, Path: "/mcp/sse", Headers: append([][2]string{{"accept", "text/event-stream"}}, headers...)}
	}
	stream := [][2]string{{":status", "200"}, {"content-type", "text/event-stream"}, {"cache-control", "no-cache"}}
	endpoint := "event: endpoint\ndata: /mcp/messages?sessionId=" + upstreamSession + "\n\n"
	open := []Request{sse(alice)}
	message := func(query string, headers ...[2]string) Request {
		return post(OpenHost, "/mcp/messages?"+query, toolsCall("1", "echo"), headers...)
	}
	hijack := func(name string, req Request, user string, calls int) Case {
		return Case{Name: name, Request: req, Before: open, BeforeResponse: stream, BeforeResponseBody: []string{endpoint},
			Want: Want{Status: 404, BodyContains: []string{"Session not found"}, LogContains: []string{`"user":"` + user + `"`, `"allow-why-false":["mcp-session-unknown"]`}, CheckCalls: calls}}
	}
	bound := func(body string) string {
		if strings.Contains(body, "sessionId="+upstreamSession) || !strings.Contains(body, "."+upstreamSession) {
			return "the endpoint must carry the session bound to its user, not the upstream's own"
		}
		return ""
	}
	return attacks([]Case{
		{
			Name: "LegacyEndpointEventReachesTheClientBound", Request: sse(alice), Want: Want{CheckCalls: 1},
			Response: stream, ResponseBody: []string{endpoint, "event: message\ndata: {}\n\n"},
			ClientBody: func(body string) string {
				if p := bound(body); p != "" {
					return p
				}
				if !strings.HasPrefix(body, "event: endpoint\ndata: /mcp/messages?sessionId=") || !strings.HasSuffix(body, "\n\nevent: message\ndata: {}\n\n") {
					return "only the session may change"
				}
				return ""
			},
		},
		{
			Name: "LegacyEndpointEventSplitAcrossChunksIsBound", Request: sse(alice), Want: Want{CheckCalls: 1},
			Response: stream, ResponseBody: []string{": keep-alive\r\n\r\nevent: end", "point\r\ndata: /mcp/messages?x=1&sessionId=" + upstreamSession[:4], upstreamSession[4:] + "\r\n", "\r\n"},
			ClientBody: bound,
		},
		{
			Name: "OtherEventStreamsPassUnchanged", Request: sse(alice), Want: Want{CheckCalls: 1},
			Response: stream, ResponseBody: []string{"id: 1\ndata: {\"sessionId\":\"x\"}\n\n", "data: /mcp/messages?sessionId=" + upstreamSession + "\n\n"},
			ClientBody: func(body string) string {
				if body != "id: 1\ndata: {\"sessionId\":\"x\"}\n\ndata: /mcp/messages?sessionId="+upstreamSession+"\n\n" {
					return "a stream whose first event is not an endpoint event must pass unchanged"
				}
				return ""
			},
		},
		{
			Name: "OwnLegacySessionReachesTheUpstreamAsItsOwnID", Request: message("sessionId="+SessionPlaceholder, alice),
			Before: open, BeforeResponse: stream, BeforeResponseBody: []string{endpoint},
			Want: Want{Upstream: map[string]string{":path": "/mcp/messages?sessionId=" + upstreamSession}, CheckCalls: 0},
		},
		hijack("AnotherUsersLegacySessionCannotCallTools", message("sessionId="+SessionPlaceholder, bob), "bob", 1),
		hijack("RawLegacySessionIDIsNotFound", message("sessionId="+upstreamSession, alice), "alice", 0),
		hijack("RawLegacySessionIDUnderAnotherSpellingIsNotFound", message("session_id="+upstreamSession, alice), "alice", 0),
		hijack("PercentEncodedLegacySessionNameIsNotFound", message("session%49d="+upstreamSession, alice), "alice", 0),
		hijack("LegacySessionAfterASemicolonIsNotFound", message("x=1;sessionId="+upstreamSession, alice), "alice", 0),
		{
			Name: "TwoLegacySessionParametersAreRefused", Request: message("sessionId="+SessionPlaceholder+"&sessionid="+upstreamSession, alice),
			Before: open, BeforeResponse: stream, BeforeResponseBody: []string{endpoint},
			Want: Want{Status: 400, CheckCalls: 0},
		},
	})
}
