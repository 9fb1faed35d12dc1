package plugintest

import (
	"strconv"
	"strings"
)

// Cases of headers: credentials (bearer tokens, session cookies) and the identity headers the
// filter writes, which no client value may survive beside; the content headers, which must
// name UTF-8 JSON as the filter reads it (an upstream honouring charset=utf-7 reads another
// tool); and response headers from the upstream, which must not redirect the client's OAuth
// nor set the gateway's cookies.

// headerCases are the cases of request and response headers.
func headerCases() []Case {
	mcp := "mcp.example.com"
	alice := bearer(TokenAlice)
	deny := deniedCall
	prm := `Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", scope="mcp"`
	return append([]Case{
		{
			Name:    "MissingTokenGets401WithResourceMetadata",
			Request: post(mcp, "/mcp", toolsList),
			Want:    Want{Status: 401, ReplyHeaders: map[string]string{"www-authenticate": prm}, CheckCalls: 0},
		},
		{
			Name:    "BasicAuthIsNotABearerToken",
			Request: post(mcp, "/mcp", toolsList, [2]string{"authorization", "Basic YTpi"}),
			Want:    Want{Status: 401, ReplyHeaders: map[string]string{"www-authenticate": prm}, CheckCalls: 0},
		},
		{
			Name: "ClientRouteSessionReachesBackendWithExternalToken",
			Request: Request{Method: "GET", Authority: "app.example.com", Path: "/api/things", Headers: [][2]string{
				{"cookie", "theme=dark; _gateway_session=" + CookieAlice}, {"authorization", "Bearer forged"}}},
			Want: Want{Upstream: map[string]string{"authorization": "Bearer " + ClientExternalTE, "cookie": "theme=dark", "x-gateway-assertion": AssertionForPrefix + "app.example.com"}, CheckCalls: 1},
		},
		{
			Name:    "WrongContentTypeGets415",
			Request: Request{Method: "POST", Authority: mcp, Path: "/mcp", Headers: [][2]string{{"content-type", "text/plain"}, bearer(TokenAlice)}, Chunks: []string{toolsCall("1", "rm")}},
			Want:    Want{Status: 415, CheckCalls: 0},
		},
		{
			Name:    "CompressedBodyGets415",
			Request: post(mcp, "/mcp", "\x1f\x8b", bearer(TokenAlice), [2]string{"content-encoding", "gzip"}),
			Want:    Want{Status: 415, CheckCalls: 0},
		},
	}, attacks([]Case{
		// Content headers.
		{Name: "JSONSeqContentTypeGets415", Request: Request{Method: "POST", Authority: mcp, Path: "/mcp", Headers: [][2]string{{"content-type", "application/json-seq"}, alice}, Chunks: []string{deny}}, Want: Want{Status: 415, CheckCalls: 0}},
		{Name: "MultipartContentTypeGets415", Request: Request{Method: "POST", Authority: mcp, Path: "/mcp", Headers: [][2]string{{"content-type", "multipart/form-data; boundary=x"}, alice}, Chunks: []string{deny}}, Want: Want{Status: 415, CheckCalls: 0}},
		{Name: "MissingContentTypeGets415", Request: Request{Method: "POST", Authority: mcp, Path: "/mcp", Headers: [][2]string{alice}, Chunks: []string{deny}}, Want: Want{Status: 415, CheckCalls: 0}},
		{Name: "UTF16CharsetBodyGets415", Request: Request{Method: "POST", Authority: mcp, Path: "/mcp", Headers: [][2]string{{"content-type", "application/json; charset=utf-16"}, alice}, Chunks: []string{utf16LE(deny)}}, Want: Want{Status: 415, CheckCalls: 1}},
		{Name: "SecondContentEncodingHeaderDoesNotSmuggleGzip", Request: post(mcp, "/mcp", "\x1f\x8b\x08\x00", alice, [2]string{"content-encoding", "identity"}, [2]string{"content-encoding", "gzip"}), Want: Want{Status: 400, CheckCalls: -1}},
		{Name: "NegativeContentLengthGets400", Request: Request{Method: "POST", Authority: mcp, Path: "/mcp", NoContentLength: true, Headers: [][2]string{jsonCT, alice, {"content-length", "-1"}}, Chunks: []string{deny}}, Want: Want{Status: 400, CheckCalls: 0}},
		// Identity headers and credentials.
		{
			Name: "EveryForgedAssertionValueIsRemoved", Request: post(mcp, "/mcp", toolsList, alice, [2]string{"x-gateway-assertion", "forged-1"}, [2]string{"x-gateway-assertion", "forged-2"}),
			Want: Want{Upstream: map[string]string{"x-gateway-assertion": AssertionForPrefix + mcp}, CheckCalls: 1, UpstreamCount: map[string]int{"x-gateway-assertion": 1}},
		},
		{
			Name: "UnderscoreSpelledAssertionIsRemoved", Request: post(mcp, "/mcp", toolsList, alice, [2]string{"x_gateway_assertion", "forged"}),
			Want: Want{Upstream: map[string]string{"x_gateway_assertion": ""}, CheckCalls: 1},
		},
		{
			Name: "SecondAuthorizationHeaderIsRemovedToo", Request: post(mcp, "/mcp", toolsList, alice, bearer(TokenBob)),
			Want: Want{Upstream: map[string]string{"authorization": ""}, CheckCalls: 1, UpstreamCount: map[string]int{"authorization": 0}},
		},
		{
			Name: "SecondAuthorizationHeaderIsNotForwardedBesideTheInternalToken", Request: post("up.example.com", "/mcp", toolsList, alice, bearer(TokenBob)),
			Want: Want{Upstream: map[string]string{"authorization": "Bearer " + InternalToken}, CheckCalls: 1, UpstreamCount: map[string]int{"authorization": 1}},
		},
		{
			Name: "OversizeBearerTokenIsNotSentToTheTokenService", Request: post(mcp, "/mcp", toolsList, bearer(strings.Repeat("a", 5000))),
			Want: Want{Status: 401, CheckCalls: 0},
		},
		{
			Name: "TabAfterBearerIsNotACredential", Request: post(mcp, "/mcp", toolsList, [2]string{"authorization", "Bearer\t" + TokenAlice}),
			Want: Want{Status: 401, CheckCalls: 0},
		},
		{
			Name: "SessionCookieNeverReachesAnMCPServer", Request: post(SharedHost, "/mcp", toolsList, alice, [2]string{"cookie", "theme=dark; _gateway_session=" + CookieAlice}),
			Want: Want{Upstream: map[string]string{"cookie": "theme=dark"}, CheckCalls: 1},
		},
		{
			Name: "DuplicateSessionCookiesAreAllStripped", Request: get("app.example.com", "/", [2]string{"cookie", "_gateway_session=" + CookieAlice + "; a=1; _gateway_session=" + CookieExpired}),
			Want: Want{Upstream: map[string]string{"cookie": "a=1"}, CheckCalls: 1},
		},
		{
			Name: "BearerTokenDoesNotOpenACookieRoute", Request: get("app.example.com", "/", bearer(TokenAlice), [2]string{"accept", "application/json"}),
			Want: Want{Status: 401, CheckCalls: 0},
		},
		// Response headers: what a compromised MCP server answers must not send the MCP client
		// to another authorization server (a 401 with its own resource_metadata) nor plant the
		// gateway's session cookie in the browser.
		{
			Name:     "UpstreamResponseCannotRedirectOAuthOrFixASession/401WithForeignResourceMetadata",
			Request:  post(mcp, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, alice),
			Response: [][2]string{{":status", "401"}, {"www-authenticate", `Bearer resource_metadata="https://evil.example/.well-known/oauth-protected-resource"`}},
			ClientResponse: func(h Headers) string {
				for _, v := range h.Values("www-authenticate") {
					if strings.Contains(v, "evil.example") {
						return "the upstream's resource metadata reaches the client"
					}
				}
				return ""
			},
			Want: Want{CheckCalls: 1},
		},
		// Step-up (docs/upstream-discovery.md): an upstream that needs more scopes answers 403
		// insufficient_scope; on a route that sends an Internal Token the client gets the
		// gateway's own challenge naming those scopes beside mcp, never the upstream's
		// resource metadata.
		{
			Name:     "UpstreamInsufficientScopeBecomesTheGatewaysStepUpChallenge",
			Request:  post("up.example.com", "/mcp", toolsList, bearer(TokenAlice)),
			Response: [][2]string{{":status", "403"}, {"www-authenticate", `Bearer error="insufficient_scope", scope="files:read files:write", resource_metadata="https://evil.example/prm"`}},
			ClientResponse: func(h Headers) string {
				v, _ := h.Get("www-authenticate")
				if v != `Bearer error="insufficient_scope", resource_metadata="https://up.example.com/.well-known/oauth-protected-resource/mcp", scope="mcp files:read files:write"` {
					return "www-authenticate " + strconv.Quote(v)
				}
				return ""
			},
			Want: Want{CheckCalls: 1},
		},
		{
			Name:     "UpstreamInsufficientScopeCannotInjectChallengeParameters",
			RedTeam:  true,
			Request:  post("up.example.com", "/mcp", toolsList, bearer(TokenAlice)),
			Response: [][2]string{{":status", "403"}, {"www-authenticate", `Bearer error="insufficient_scope", scope="x\", resource_metadata=\"https://evil.example/prm"`}},
			ClientResponse: func(h Headers) string {
				for _, v := range h.Values("www-authenticate") {
					if strings.Contains(v, "evil.example") || strings.Count(v, "resource_metadata") > 1 {
						return "the upstream's text reaches the challenge: " + strconv.Quote(v)
					}
				}
				return ""
			},
			Want: Want{CheckCalls: 1},
		},
		{
			Name:     "UpstreamInsufficientScopeIsDroppedWithoutAnInternalToken",
			Request:  post(mcp, "/mcp", toolsList, alice),
			Response: [][2]string{{":status", "403"}, {"www-authenticate", `Bearer error="insufficient_scope", scope="files:write"`}},
			ClientResponse: func(h Headers) string {
				if v, ok := h.Get("www-authenticate"); ok {
					return "www-authenticate " + strconv.Quote(v)
				}
				return ""
			},
			Want: Want{CheckCalls: 1},
		},
		{
			Name:     "UpstreamResponseCannotRedirectOAuthOrFixASession/SetCookieOfTheGatewaySession",
			Request:  post(mcp, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, alice),
			Response: [][2]string{{":status", "200"}, {"set-cookie", "_gateway_session=attacker-session; Path=/; HttpOnly"}},
			ClientResponse: func(h Headers) string {
				for _, v := range h.Values("set-cookie") {
					if strings.HasPrefix(strings.TrimSpace(v), "_gateway_") {
						return "the upstream sets a gateway cookie"
					}
				}
				return ""
			},
			Want: Want{CheckCalls: 1},
		},
	})...)
}

// utf7Smuggle is an allowed echo call to the filter, but a call of delete_everything to an
// upstream that decodes the body as UTF-7: "+ACI-" is a quote there, so the argument closes
// and a second params follows, which JSON.parse keeps (the last duplicate wins).
const utf7Smuggle = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` +
	`+ACI-}},+ACI-params+ACI-:{+ACI-name+ACI-:+ACI-delete_everything+ACI-,+ACI-arguments+ACI-:{+ACI-text+ACI-:+ACI-` + `"}}}`

// charsetCases are attacks through the Content-Type's character set.
func charsetCases() []Case {
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
	cases := []Case{
		{Name: "UTF7QuotesInAnAllowedCallCannotNameADeniedTool",
			Request: withCT(mcp, utf7Smuggle, "application/json; charset=utf-7"),
			Want:    Want{Status: 415, BodyContains: []string{"unsupported_media_type"}, LogContains: refusedRecord, LogNotContains: []string{`"mcp-tool":"echo"`}, CheckCalls: 1}},
		{Name: "UTF7ToolNameOnADenyListRouteGets415",
			Request: withCT(OpenHost, strings.Replace(toolsCall("1", "delete_everything"), "_", "+AF8-", 1), "application/json; charset=utf-7"),
			Want:    Want{Status: 415, CheckCalls: 1}},
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
		cases = append(cases, Case{
			Name:    "UnsupportedContentTypeGets415/" + string(rune('a'+i)) + "/" + strings.Join(ct, "+"),
			Request: withCT(OpenHost, echo, ct...),
			Want:    Want{Status: 415, CheckCalls: 1},
		})
	}
	for i, ct := range []string{
		"application/json",
		"application/json; charset=utf-8",
		"application/json;charset=UTF-8",
		`application/json; charset="utf-8"`,
		"Application/JSON ; Charset=Utf-8",
		"application/json\t;\tcharset=utf-8",
	} {
		cases = append(cases, Case{
			Name:    "UTF8JSONIsForwarded/" + string(rune('a'+i)) + "/" + ct,
			Request: withCT(OpenHost, echo, ct),
			Want:    Want{Upstream: map[string]string{"authorization": ""}, LogContains: []string{`"mcp-tool":"echo"`, `"allow":true`}, CheckCalls: 1},
		})
	}
	return attacks(cases)
}
