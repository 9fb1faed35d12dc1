package plugintest

import "strings"

// Red-team cases of session binding (Mcp-Session-Id and the legacy transport's query
// session) and of the Content-Type rule, beyond bindingCases, legacySessionCases and
// charsetCases: spellings of a session or of a charset that some real upstream reads as one,
// and responses that carry more than one session or one on an error.

// redTeamSessionCases are the attacks; the ones that are not defeated say so in a comment.
func redTeamSessionCases() []Case {
	alice, bob := bearer(TokenAlice), bearer(TokenBob)
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	opened := [][2]string{{":status", "200"}, {"content-type", "application/json"}, {"mcp-session-id", upstreamSession}}
	open := []Request{post(OpenHost, "/mcp", initialize, alice)}
	notFound := func(user string, calls int) Want {
		return Want{Status: 404, BodyContains: []string{"Session not found"},
			LogContains: []string{`"user":"` + user + `"`, `"allow-why-false":["mcp-session-unknown"]`}, CheckCalls: calls}
	}

	// The legacy transport: alice opened an event stream whose endpoint names up-session-1.
	sse := Request{Method: "GET", Authority: OpenHost, Path: "/mcp/sse", Headers: [][2]string{{"accept", "text/event-stream"}, alice}}
	stream := [][2]string{{":status", "200"}, {"content-type", "text/event-stream"}, {"cache-control", "no-cache"}}
	endpoint := "event: endpoint\ndata: /mcp/messages?sessionId=" + upstreamSession + "\n\n"
	message := func(query string, headers ...[2]string) Request {
		return post(OpenHost, "/mcp/messages?"+query, toolsCall("1", "echo"), headers...)
	}
	legacyHijack := func(name string, req Request, user string, calls int) Case {
		return Case{Name: name, Request: req, Before: []Request{sse}, BeforeResponse: stream, BeforeResponseBody: []string{endpoint}, Want: notFound(user, calls)}
	}

	cases := []Case{
		// Header spellings.
		{
			Name: "EmptySessionHeaderIsNotFound", Request: post(OpenHost, "/mcp", toolsList, alice, [2]string{"mcp-session-id", ""}),
			Before: open, BeforeResponse: opened, Want: notFound("alice", 0),
		},
		// NOT DEFEATED. Upstreams behind CGI/WSGI (and Rack) read "mcp_session_id" as
		// Mcp-Session-Id (both are HTTP_MCP_SESSION_ID), as the filter already assumes of
		// X-Gateway-Assertion; Envoy forwards underscores in header names by default. The
		// filter counts only "mcp-session-id", so bob's request with alice's raw ID in the
		// underscore spelling reaches the upstream unchecked.
		{
			Name: "RawSessionInAnUnderscoreSpelledHeaderIsNotFound", Request: post(OpenHost, "/mcp", toolsCall("1", "echo"), bob, [2]string{"mcp_session_id", upstreamSession}),
			Before: open, BeforeResponse: opened, Want: notFound("bob", 1),
		},
		// A bound Mcp-Session-Id does not vouch for a raw session in the query.
		legacyHijack("BoundSessionHeaderDoesNotLetARawQuerySessionThrough",
			message("sessionId="+upstreamSession, alice, [2]string{"mcp-session-id", SessionPlaceholder}), "alice", 0),

		// Responses.
		{
			Name: "SeveralUpstreamSessionHeadersReachTheClientAsOneBoundID", Request: post(OpenHost, "/mcp", initialize, alice), Want: Want{CheckCalls: 1},
			Response: [][2]string{{":status", "200"}, {"content-type", "application/json"}, {"mcp-session-id", upstreamSession}, {"mcp-session-id", "up-session-2"}},
			ClientResponse: func(h Headers) string {
				ids := h.Values("mcp-session-id")
				if len(ids) != 1 || !strings.HasSuffix(ids[0], "."+upstreamSession) {
					return "the client must get exactly one session ID, bound"
				}
				return ""
			},
		},
		{
			Name: "SessionIDOnAnUpstream401IsNeverRaw", Request: post(OpenHost, "/mcp", initialize, alice), Want: Want{CheckCalls: 1},
			Response: [][2]string{{":status", "401"}, {"content-type", "application/json"}, {"mcp-session-id", upstreamSession}, {"www-authenticate", `Bearer resource_metadata="https://evil.example/x"`}},
			ClientResponse: func(h Headers) string {
				for _, id := range h.Values("mcp-session-id") {
					if id == upstreamSession || !strings.HasSuffix(id, "."+upstreamSession) {
						return "a session ID on an error response must be bound or withheld"
					}
				}
				return ""
			},
		},

		// Legacy query spellings that Express 5 (node:querystring), Starlette (parse_qsl) and
		// Go (net/url) read exactly, or not at all: refused when they name a session.
		legacyHijack("LegacySessionNameInUpperCaseIsNotFound", message("SESSIONID="+upstreamSession, bob), "bob", 1),
		legacyHijack("LegacySessionNameWithALongSIsNotFound", message("\u017fessionid="+upstreamSession, bob), "bob", 1),
		legacyHijack("LegacySessionNameWithAnEncodedUnderscoreIsNotFound", message("session%5Fid="+upstreamSession, bob), "bob", 1),
		legacyHijack("LegacySessionWithoutAValueIsNotFound", message("x=1&sessionId", alice), "alice", 0),
		legacyHijack("EmptyLegacySessionIsNotFound", message("sessionId=&x=1", alice), "alice", 0),
		legacyHijack("LegacySessionWithAnUndecodableValueIsNotFound", message("sessionId=%zz"+upstreamSession, alice), "alice", 0),
		{
			Name: "BoundAndRawLegacySessionsSplitBySemicolonAreRefused", Request: message("sessionId="+SessionPlaceholder+";session_id="+upstreamSession, alice),
			Before: []Request{sse}, BeforeResponse: stream, BeforeResponseBody: []string{endpoint},
			Want: Want{Status: 400, CheckCalls: 0},
		},
		{
			// An upstream session ID with characters that mean something in a query reaches the
			// upstream as it encoded it.
			Name: "LegacySessionIDWithQueryCharactersRoundTrips", Request: message("sessionId="+SessionPlaceholder+"&x=1", alice),
			Before: []Request{sse}, BeforeResponse: stream, BeforeResponseBody: []string{"event: endpoint\ndata: /mcp/messages?sessionId=a%2Bb%2Fc%3Dd%26e\n\n"},
			Want: Want{Upstream: map[string]string{":path": "/mcp/messages?sessionId=a%2Bb%2Fc%3Dd%26e&x=1"}, CheckCalls: 0},
		},
		{
			Name: "LegacyEndpointEventWithCRLFKeepsTheEventsAfterIt", Request: sse, Want: Want{CheckCalls: 1},
			Response: stream, ResponseBody: []string{"event: endpoint\r\ndata: /mcp/messages?sessionId=" + upstreamSession + "\r\n\r\nevent: message\r\ndata: {\"sessionId\":\"" + upstreamSession + "\"}\r\n\r\n"},
			ClientBody: func(body string) string {
				first, rest, _ := strings.Cut(body, "\r\n\r\n")
				if strings.Contains(first, "sessionId="+upstreamSession) || !strings.Contains(first, "."+upstreamSession) {
					return "the endpoint must be bound"
				}
				if rest != "event: message\r\ndata: {\"sessionId\":\""+upstreamSession+"\"}\r\n\r\n" {
					return "the events after the endpoint event must pass unchanged"
				}
				return ""
			},
		},
	}

	// NOT DEFEATED. Bracket notation: qs (Express 4's default query parser, Express 5 with
	// "query parser" set to "extended", and any app parsing with qs) reads sessionId[]=X,
	// sessionId[0]=X and sessionId%5B%5D=X as sessionId = ["X"], which the usual lookups
	// (transports[req.query.sessionId], map.get(String(req.query.sessionId))) turn into "X";
	// Rack and PHP read session_id[]=X alike. isSessionParam accepts names of 9 or 10 bytes
	// only, so none is taken for a session: bob's post with alice's raw ID (readable in her
	// bound ID, "<tag>.<raw>") reaches the upstream unchecked.
	for i, q := range []string{"sessionId[]=", "sessionId%5B%5D=", "sessionId[0]=", "session_id[]=", "sessionid[]="} {
		cases = append(cases, legacyHijack("LegacySessionInBracketNotationIsNotFound/"+string(rune('a'+i))+"/"+q,
			message(q+upstreamSession, bob), "bob", 1))
	}

	// Content-Type. NOT DEFEATED: contentTypeOf compares with strings.EqualFold, which folds
	// U+017F (ſ) to "s", so "charſet=utf-8" and "application/jſon" pass for the one allowed
	// spelling though neither is a media type or parameter name any upstream parses (the
	// documented rule: anything but application/json with no parameter or exactly
	// charset=utf-8 gets 415).
	echo := toolsCall("1", "echo")
	withCT := func(ct string) Request {
		return Request{Method: "POST", Authority: OpenHost, Path: "/mcp", Headers: [][2]string{{"content-type", ct}, alice}, Chunks: []string{echo}}
	}
	cases = append(cases,
		Case{Name: "NonASCIIParameterNameThatFoldsToCharsetGets415", Request: withCT("application/json; char\u017fet=utf-8"), Want: Want{Status: 415, CheckCalls: 1}},
		Case{Name: "NonASCIIMediaTypeThatFoldsToJSONGets415", Request: withCT("application/j\u017fon"), Want: Want{Status: 415, CheckCalls: 0}},
		// Defeated: RFC 2231 extended charset, a trailing ";", single quotes.
		Case{Name: "ExtendedCharsetParameterGets415", Request: withCT("application/json; charset*=utf-7''"), Want: Want{Status: 415, CheckCalls: 1}},
		Case{Name: "CharsetWithATrailingSemicolonGets415", Request: withCT("application/json; charset=utf-8;"), Want: Want{Status: 415, CheckCalls: 1}},
		Case{Name: "SingleQuotedCharsetGets415", Request: withCT("application/json; charset='utf-7'"), Want: Want{Status: 415, CheckCalls: 1}},
		// Defeated: a Content-Type only in the trailers is no Content-Type.
		Case{Name: "ContentTypeOnlyInTrailersGets415",
			Request:  Request{Method: "POST", Authority: OpenHost, Path: "/mcp", Headers: [][2]string{alice}, Chunks: []string{echo}},
			Trailers: [][2]string{{"content-type", "application/json"}},
			Want:     Want{Status: 415, CheckCalls: 0}},
	)
	return attacks(cases)
}

// compressedStreamCases: an event stream declared compressed is not read (the filter could
// only hold it until 4 KiB or its end). On a route that filters tool lists it is refused (the
// gateway asked for identity; a list in it would reach the client unfiltered): neither the
// stream nor the session in it reaches the client.
func compressedStreamCases() []Case {
	body := "event: endpoint\ndata: /mcp/messages?sessionId=" + upstreamSession + "\n\n"
	return attacks([]Case{{
		Name:         "CompressedEventStreamIsNotRead",
		Request:      Request{Method: "GET", Authority: OpenHost, Path: "/mcp/sse", Headers: [][2]string{{"accept", "text/event-stream"}, bearer(TokenAlice)}},
		Want:         Want{CheckCalls: 1},
		Response:     [][2]string{{":status", "200"}, {"content-type", "text/event-stream"}, {"content-encoding", "br"}},
		ResponseBody: []string{body},
		ClientBody: func(got string) string {
			if strings.Contains(got, upstreamSession) {
				return "the compressed stream reached the client"
			}
			return ""
		},
	}})
}
