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
