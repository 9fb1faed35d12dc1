package plugintest

import (
	"encoding/json"
	"strings"
	"unicode/utf16"
)

// Red-team scenarios: requests an attacker sends to get past policy, leak a credential,
// confuse routing or make the filter fail open, with what must come of each. They run
// natively (filter/plugin) and against filter.wasm (wasmtest/filtertest), like Scenarios.

// RedTeamCase is one attack.
type RedTeamCase struct {
	Scenario
	// Before are requests sent first on the same filter VM (to fill the decision cache).
	Before []Request
	// Trailers, when set, end the request with trailers: no body chunk carries the end of
	// stream (an HTTP/2 client, or HTTP/1 chunked with trailers enabled in Envoy).
	Trailers [][2]string
	// Answer, when set, answers the check calls instead of AnswerCheck.
	Answer func(key string, body []byte) CheckAnswer
	// UpstreamCount is how many values of a header the upstream must receive.
	UpstreamCount map[string]int
	// Response, when set, is the upstream's answer (":status" and headers) to the request
	// if it was forwarded; BeforeResponse is its answer to each of Before. The Mcp-Session-Id
	// the client received last in an answer to Before replaces SessionPlaceholder in the
	// values of Request.Headers.
	Response, BeforeResponse [][2]string
	// ClientResponse, when set, reports what is wrong with the response headers the client
	// receives for Response ("" when nothing is).
	ClientResponse func(headers map[string]string) string
}

// SessionPlaceholder in a header value of a RedTeamCase request stands for the MCP session ID
// the client received in an answer to a Before request.
const SessionPlaceholder = "$SESSION"

// WithSession returns req with SessionPlaceholder replaced by session in its header values.
func WithSession(req Request, session string) Request {
	hs := make([][2]string, len(req.Headers))
	for i, h := range req.Headers {
		hs[i] = [2]string{h[0], strings.ReplaceAll(h[1], SessionPlaceholder, session)}
	}
	req.Headers = hs
	return req
}

// Hosts of RedTeamConfig besides those of Config.
const (
	// SharedHost carries a plain route at "/", a stricter plain route at "/admin" (only
	// admin@example.com) and an MCP server route at "/mcp" with the recommended policy.
	SharedHost = "shared.example.com"
	// OpenHost carries two MCP server routes, "/mcp" and "/other", that let every signed-in
	// user call any tool but delete_everything (a deny list).
	OpenHost = "open.example.com"
)

// RedTeamConfig is Config with the routes of SharedHost added.
func RedTeamConfig() []byte {
	var cfg map[string]any
	if err := json.Unmarshal(Config(), &cfg); err != nil {
		panic(err)
	}
	authenticated := map[string]any{"allow": map[string]any{"and": []any{map[string]any{"authenticated_user": true}}}}
	adminOnly := map[string]any{"allow": map[string]any{"and": []any{map[string]any{"email": map[string]any{"is": "admin@example.com"}}}}}
	recommended := map[string]any{
		"allow": map[string]any{"and": []any{map[string]any{"domain": map[string]any{"is": "example.com"}}}},
		"deny":  map[string]any{"and": []any{map[string]any{"mcp_tool": map[string]any{"not_in": []any{"echo", "add"}}}}},
	}
	denyList := map[string]any{
		"allow": map[string]any{"and": []any{map[string]any{"authenticated_user": true}}},
		"deny":  map[string]any{"and": []any{map[string]any{"mcp_tool": map[string]any{"is": "delete_everything"}}}},
	}
	cfg["routes"] = append(cfg["routes"].([]any),
		route("https://"+OpenHost+"/mcp", OpenHost, "/mcp", "server", 4096, false, denyList),
		route("https://"+OpenHost+"/other", OpenHost, "/other", "server", 4096, false, denyList),
		route("https://"+SharedHost, SharedHost, "/", "plain", 0, false, authenticated),
		route("https://"+SharedHost+"/admin", SharedHost, "/admin", "plain", 0, false, adminOnly),
		route("https://"+SharedHost+"/mcp", SharedHost, "/mcp", "server", 4096, false, recommended),
	)
	b, err := json.Marshal(cfg)
	if err != nil {
		panic(err)
	}
	return b
}

func utf16LE(s string) string {
	var b strings.Builder
	b.WriteString("\xff\xfe")
	for _, u := range utf16.Encode([]rune(s)) {
		b.WriteByte(byte(u))
		b.WriteByte(byte(u >> 8))
	}
	return b.String()
}

func okAnswer(fields string) func(string, []byte) CheckAnswer {
	return func(key string, _ []byte) CheckAnswer {
		if key != FilterKey {
			return CheckAnswer{Status: 401, Body: `{"status":"invalid_key"}`}
		}
		return CheckAnswer{Status: 200, Body: `{"status":"ok"` + fields + `}`}
	}
}

const (
	aliceIdentity = `,"identity":{"sub":"alice","email":"alice@example.com"}`
	anAssertion   = `,"assertion":"eyJhbGciOiJFUzI1NiJ9.x.y"`
)

// RedTeamCases returns every attack. Names say the behaviour that holds.
func RedTeamCases() []RedTeamCase {
	mcp := "mcp.example.com"
	alice := bearer(TokenAlice)
	deny := toolsCall("1", "delete_everything")
	// smuggle is a POST of body to the recommended-pattern route that must be refused with
	// status (400 for a body the filter cannot read as the upstream will, 403 for a denied
	// tool), never forwarded.
	smuggle := func(name, body string, status int) RedTeamCase {
		return RedTeamCase{Scenario: Scenario{Name: name, Request: post(mcp, "/mcp", body, alice), Want: Want{Status: status, CheckCalls: -1}}}
	}
	get := func(authority, path string, headers ...[2]string) Request {
		return Request{Method: "GET", Authority: authority, Path: path, Headers: headers}
	}
	cases := []RedTeamCase{
		// --- Body smuggling: the body the filter reads is the one the upstream will read. ---
		smuggle("BOMBeforeTheObjectIsRefused", "\xef\xbb\xbf"+deny, 400),
		smuggle("UTF16BodyIsRefused", utf16LE(deny), 400),
		smuggle("CommentInJSONIsRefused", `/*x*/`+deny, 400),
		smuggle("TrailingGarbageAfterTheObjectIsRefused", toolsCall("1", "echo")+`x`, 400),
		smuggle("SecondObjectAfterTheFirstIsRefused", toolsCall("1", "echo")+deny, 400),
		smuggle("NestingDeeperThanTheSDKIsRefused", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"a":`+strings.Repeat("[", 1001)+strings.Repeat("]", 1001)+`}}}`, 400),
		smuggle("DuplicateToolNameIsRefused", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","name":"delete_everything"}}`, 400),
		smuggle("EscapedDuplicateToolNameIsRefused", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","n\u0061me":"delete_everything"}}`, 400),
		smuggle("CaseVariantToolNameKeyIsRefused", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","Name":"delete_everything"}}`, 400),
		smuggle("LongSParamsKeyIsRefused", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"},"param\u017f":{"name":"delete_everything"}}`, 400),
		smuggle("CaseVariantMethodKeyIsRefused", `{"jsonrpc":"2.0","id":1,"method":"tools/list","Method":"tools/call","params":{"name":"delete_everything"}}`, 400),
		smuggle("DuplicateParamsIsRefused", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"},"params":{"name":"delete_everything"}}`, 400),
		smuggle("NULInToolNameIsRefused", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo\u0000"}}`, 400),
		smuggle("LoneSurrogateInToolNameIsRefused", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo\ud800"}}`, 400),
		smuggle("InvalidUTF8InToolNameIsRefused", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\xff\"}}", 400),
		smuggle("ParamsAsArrayIsRefused", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":["delete_everything"]}`, 400),
		smuggle("IDAsObjectIsRefused", `{"jsonrpc":"2.0","id":{"a":1},"method":"tools/call","params":{"name":"delete_everything"}}`, 400),
		smuggle("MissingJSONRPCVersionIsRefused", `{"id":1,"method":"tools/call","params":{"name":"delete_everything"}}`, 400),
		smuggle("MethodWithResultIsRefused", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"delete_everything"},"result":{}}`, 400),
		smuggle("NestedBatchIsRefused", `[[`+deny+`]]`, 400),
		smuggle("EmptyBatchIsRefused", `[]`, 400),
		smuggle("TrailingSpaceInToolNameIsDenied", toolsCall("1", "echo "), 403),
		smuggle("FullwidthToolNameIsDenied", toolsCall("1", "ｅｃｈｏ"), 403),
		smuggle("ZeroWidthSpaceInToolNameIsDenied", toolsCall("1", "ech\u200bo"), 403),
		smuggle("DeniedToolAsNotificationIsDenied", `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"delete_everything"}}`, 403),
		smuggle("DeniedToolBehindAResponseInABatchIsDenied", `[{"jsonrpc":"2.0","id":"s1","result":{}},`+deny+`]`, 403),
		smuggle("DeniedNotificationInABatchIsDenied", `[`+toolsCall("1", "echo")+`,{"jsonrpc":"2.0","method":"tools/call","params":{"name":"delete_everything"}}]`, 403),
		smuggle("HugeIDDoesNotHideTheTool", `{"jsonrpc":"2.0","id":1e999999,"method":"tools/call","params":{"name":"delete_everything"}}`, 403),
		{
			Scenario: Scenario{
				Name:    "EscapedAllowedToolNameIsTheAllowedTool",
				Request: post(mcp, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{"name":"e\u0063ho"}}`, alice),
				Want:    Want{Upstream: map[string]string{"authorization": ""}, LogContains: []string{`"mcp-tool":"echo"`}, CheckCalls: 1},
			},
		},
		// --- Content headers. ---
		{Scenario: Scenario{Name: "JSONSeqContentTypeGets415", Request: Request{Method: "POST", Authority: mcp, Path: "/mcp", Headers: [][2]string{{"content-type", "application/json-seq"}, alice}, Chunks: []string{deny}}, Want: Want{Status: 415, CheckCalls: 0}}},
		{Scenario: Scenario{Name: "MultipartContentTypeGets415", Request: Request{Method: "POST", Authority: mcp, Path: "/mcp", Headers: [][2]string{{"content-type", "multipart/form-data; boundary=x"}, alice}, Chunks: []string{deny}}, Want: Want{Status: 415, CheckCalls: 0}}},
		{Scenario: Scenario{Name: "MissingContentTypeGets415", Request: Request{Method: "POST", Authority: mcp, Path: "/mcp", Headers: [][2]string{alice}, Chunks: []string{deny}}, Want: Want{Status: 415, CheckCalls: 0}}},
		{Scenario: Scenario{Name: "UTF16CharsetBodyGets415", Request: Request{Method: "POST", Authority: mcp, Path: "/mcp", Headers: [][2]string{{"content-type", "application/json; charset=utf-16"}, alice}, Chunks: []string{utf16LE(deny)}}, Want: Want{Status: 415, CheckCalls: 1}}},
		{Scenario: Scenario{Name: "SecondContentEncodingHeaderDoesNotSmuggleGzip", Request: post(mcp, "/mcp", "\x1f\x8b\x08\x00", alice, [2]string{"content-encoding", "identity"}, [2]string{"content-encoding", "gzip"}), Want: Want{Status: 400, CheckCalls: -1}}},
		{Scenario: Scenario{Name: "NegativeContentLengthGets400", Request: Request{Method: "POST", Authority: mcp, Path: "/mcp", NoContentLength: true, Headers: [][2]string{jsonCT, alice, {"content-length", "-1"}}, Chunks: []string{deny}}, Want: Want{Status: 400, CheckCalls: 0}}},
		// --- Bodies that arrive another way than a POST ending with its last data frame. ---
		{
			Scenario: Scenario{Name: "DeniedToolEndedByTrailersIsStillDenied", Request: post(mcp, "/mcp", deny, alice), Want: Want{Status: 403, CheckCalls: -1}},
			Trailers: [][2]string{{"x-checksum", "1"}},
		},
		{
			Scenario: Scenario{Name: "AllowedToolEndedByTrailersIsForwardedOnlyAfterTheCheck", Request: post(mcp, "/mcp", toolsCall("1", "echo"), alice), Want: Want{Upstream: map[string]string{"authorization": ""}, CheckCalls: 1}},
			Trailers: [][2]string{{"x-checksum", "1"}},
		},
		{
			Scenario: Scenario{Name: "InvalidTokenEndedByTrailersIsRefused", Request: post(mcp, "/mcp", toolsCall("1", "echo"), bearer(TokenInvalid)), Want: Want{Status: 401, CheckCalls: 1}},
			Trailers: [][2]string{{"x-checksum", "1"}},
		},
		{
			Scenario: Scenario{Name: "GETWithABodyIsRefused", Request: Request{Method: "GET", Authority: mcp, Path: "/mcp", Headers: [][2]string{jsonCT, alice}, Chunks: []string{deny}}, Want: Want{Status: 400, CheckCalls: -1}},
		},
		{
			Scenario: Scenario{Name: "LowerCasePostWithABodyIsRefused", Request: Request{Method: "post", Authority: mcp, Path: "/mcp", Headers: [][2]string{jsonCT, alice}, Chunks: []string{deny}}, Want: Want{Status: 400, CheckCalls: -1}},
		},
		{
			Scenario: Scenario{Name: "MethodOverrideGETWithABodyIsRefused", Request: Request{Method: "GET", Authority: mcp, Path: "/mcp", Headers: [][2]string{jsonCT, alice, {"x-http-method-override", "POST"}}, Chunks: []string{deny}}, Want: Want{Status: 400, CheckCalls: -1}},
			Before:   []Request{post(mcp, "/mcp", toolsList, alice)},
		},
		{
			Scenario: Scenario{Name: "CORSPreflightWithABodyIsAnsweredNotForwarded", Request: Request{Method: "OPTIONS", Authority: mcp, Path: "/mcp", Headers: [][2]string{jsonCT, {"origin", "https://evil.example"}, {"access-control-request-method", "POST"}}, Chunks: []string{deny}}, Want: Want{Status: 204, CheckCalls: 0}},
		},
		// --- Identity headers and credentials. ---
		{
			Scenario: Scenario{Name: "EveryForgedAssertionValueIsRemoved", Request: post(mcp, "/mcp", toolsList, alice, [2]string{"x-gateway-assertion", "forged-1"}, [2]string{"x-gateway-assertion", "forged-2"}),
				Want: Want{Upstream: map[string]string{"x-gateway-assertion": AssertionForPrefix + mcp}, CheckCalls: 1}},
			UpstreamCount: map[string]int{"x-gateway-assertion": 1},
		},
		{
			Scenario: Scenario{Name: "UnderscoreSpelledAssertionIsRemoved", Request: post(mcp, "/mcp", toolsList, alice, [2]string{"x_gateway_assertion", "forged"}),
				Want: Want{Upstream: map[string]string{"x_gateway_assertion": ""}, CheckCalls: 1}},
		},
		{
			Scenario: Scenario{Name: "SecondAuthorizationHeaderIsRemovedToo", Request: post(mcp, "/mcp", toolsList, alice, bearer(TokenBob)),
				Want: Want{Upstream: map[string]string{"authorization": ""}, CheckCalls: 1}},
			UpstreamCount: map[string]int{"authorization": 0},
		},
		{
			Scenario: Scenario{Name: "SecondAuthorizationHeaderIsNotForwardedBesideTheInternalToken", Request: post("up.example.com", "/mcp", toolsList, alice, bearer(TokenBob)),
				Want: Want{Upstream: map[string]string{"authorization": "Bearer " + InternalToken}, CheckCalls: 1}},
			UpstreamCount: map[string]int{"authorization": 1},
		},
		{
			Scenario: Scenario{Name: "OversizeBearerTokenIsNotSentToTheTokenService", Request: post(mcp, "/mcp", toolsList, bearer(strings.Repeat("a", 5000))),
				Want: Want{Status: 401, CheckCalls: 0}},
		},
		{
			Scenario: Scenario{Name: "TabAfterBearerIsNotACredential", Request: post(mcp, "/mcp", toolsList, [2]string{"authorization", "Bearer\t" + TokenAlice}),
				Want: Want{Status: 401, CheckCalls: 0}},
		},
		{
			Scenario: Scenario{Name: "SessionCookieNeverReachesAnMCPServer", Request: post(SharedHost, "/mcp", toolsList, alice, [2]string{"cookie", "theme=dark; _gateway_session=" + CookieAlice}),
				Want: Want{Upstream: map[string]string{"cookie": "theme=dark"}, CheckCalls: 1}},
		},
		{
			Scenario: Scenario{Name: "DuplicateSessionCookiesAreAllStripped", Request: get("app.example.com", "/", [2]string{"cookie", "_gateway_session=" + CookieAlice + "; a=1; _gateway_session=" + CookieExpired}),
				Want: Want{Upstream: map[string]string{"cookie": "a=1"}, CheckCalls: 1}},
		},
		{
			Scenario: Scenario{Name: "BearerTokenDoesNotOpenACookieRoute", Request: get("app.example.com", "/", bearer(TokenAlice), [2]string{"accept", "application/json"}),
				Want: Want{Status: 401, CheckCalls: 0}},
		},
		{
			Scenario: Scenario{Name: "CookieValueAsBearerTokenIsNotServedFromTheCookieCacheEntry", Request: post(mcp, "/mcp", toolsList, bearer(CookieAlice)),
				Want: Want{Status: 401, CheckCalls: 1}},
			Before: []Request{get("app.example.com", "/", [2]string{"cookie", "_gateway_session=" + CookieAlice})},
		},
		{
			Scenario: Scenario{Name: "CachedBundleOfOneUserIsNotServedToAnother", Request: post(mcp, "/mcp", toolsList, bearer(TokenBob)),
				Want: Want{Status: 403, LogContains: []string{`"user":"bob"`}, CheckCalls: 1}},
			Before: []Request{post(mcp, "/mcp", toolsList, alice)},
		},
		{
			Scenario: Scenario{Name: "CachedBundleOfOneRouteIsNotServedToAnother", Request: post(SharedHost, "/mcp", toolsList, alice),
				Want: Want{Upstream: map[string]string{"x-gateway-assertion": AssertionForPrefix + SharedHost}, CheckCalls: 1}},
			Before: []Request{post(mcp, "/mcp", toolsList, alice)},
		},
		// --- Hosts. ---
		{
			Scenario: Scenario{Name: "LeadingZeroPortStillReachesTheRoute", Request: post(mcp+":0443", "/mcp", deny, [2]string{"x-gateway-assertion", "forged"}),
				Want: Want{Status: 401, CheckCalls: 0}},
		},
		{
			Scenario: Scenario{Name: "UserinfoInAuthorityStillReachesTheRoute", Request: post("user@"+mcp, "/mcp", deny),
				Want: Want{Status: 401, CheckCalls: 0}},
		},
		{
			Scenario: Scenario{Name: "TrailingDotsStillReachTheRoute", Request: post(mcp+"..", "/mcp", deny),
				Want: Want{Status: 401, CheckCalls: 0}},
		},
		{
			Scenario: Scenario{Name: "MalformedPortOnARouteHostIsNotWavedThrough", Request: post(mcp+":443x", "/mcp", deny),
				Want: Want{Status: 404, CheckCalls: 0}},
		},
		{
			Scenario: Scenario{Name: "OtherPortOnARouteHostStillReachesTheRoute", Request: post(mcp+":8443", "/mcp", deny, [2]string{"x-gateway-assertion", "forged"}),
				Want: Want{Status: 401, CheckCalls: 0}},
		},
		// --- Paths. ---
		{Scenario: Scenario{Name: "GatewayPathWithDotSegmentsIsRefused", Request: post(mcp, "/.gateway/../mcp", deny), Want: Want{Status: 400, CheckCalls: 0}}},
		{Scenario: Scenario{Name: "ProtectedResourcePathWithDotSegmentsIsRefused", Request: post(mcp, "/.well-known/oauth-protected-resource/../../mcp", deny), Want: Want{Status: 400, CheckCalls: 0}}},
		{Scenario: Scenario{Name: "EscapedSlashAfterGatewayPrefixIsRefused", Request: post(mcp, "/.gateway%2f..%2fmcp", deny), Want: Want{Status: 400, CheckCalls: 0}}},
		{Scenario: Scenario{Name: "DoubleEncodedDotSegmentIsRefused", Request: get(mcp, "/mcp/%252e%252e/admin", alice), Want: Want{Status: 400, CheckCalls: 0}}},
		{Scenario: Scenario{Name: "AbsoluteFormTargetIsRefused", Request: post(mcp, "https://"+mcp+"/mcp", deny, alice), Want: Want{Status: 400, CheckCalls: 0}}},
		{Scenario: Scenario{Name: "UpperCaseRoutePathIsRefused", Request: post(mcp, "/MCP", deny, alice), Want: Want{Status: 400, CheckCalls: 0}}},
		{Scenario: Scenario{Name: "PercentEncodedRoutePathIsRefused", Request: post(mcp, "/%6dcp", deny, alice), Want: Want{Status: 400, CheckCalls: 0}}},
		{
			Scenario: Scenario{Name: "StricterRouteIsNotEscapedByPercentEncoding", Request: get(SharedHost, "/%61dmin/users", [2]string{"cookie", "_gateway_session=" + CookieAlice}),
				Want: Want{Status: 400, CheckCalls: 0}},
		},
		{
			Scenario: Scenario{Name: "StricterRouteIsNotEscapedByCase", Request: get(SharedHost, "/ADMIN/users", [2]string{"cookie", "_gateway_session=" + CookieAlice}),
				Want: Want{Status: 400, CheckCalls: 0}},
		},
		{
			Scenario: Scenario{Name: "StricterRouteIsNotEscapedByAPathParameter", Request: get(SharedHost, "/admin;x=1/users", [2]string{"cookie", "_gateway_session=" + CookieAlice}),
				Want: Want{Status: 400, CheckCalls: 0}},
		},
		{
			Scenario: Scenario{Name: "StricterRouteIsNotEscapedByDotDotSemicolon", Request: get(SharedHost, "/public/..;/admin/users", [2]string{"cookie", "_gateway_session=" + CookieAlice}),
				Want: Want{Status: 400, CheckCalls: 0}},
		},
		{
			Scenario: Scenario{Name: "StricterRouteIsNotEscapedByAParameterOnlySegment", Request: get(SharedHost, "/;/admin/users", [2]string{"cookie", "_gateway_session=" + CookieAlice}),
				Want: Want{Status: 400, CheckCalls: 0}},
		},
		{
			Scenario: Scenario{Name: "ToolArgumentsCannotForgeALogLine", Request: post(mcp, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"a":[`+"\n"+`{"level":"info","forged":true}`+"\n"+`]}}}`, alice),
				Want: Want{Upstream: map[string]string{"authorization": ""}, LogContains: []string{`"mcp-tool-parameters":{"a":[{"level":"info","forged":true}]}`},
					LogNotContains: []string{"\n{\"level\":\"info\",\"forged\""}, CheckCalls: 1}},
		},
		{
			Scenario: Scenario{Name: "StricterRouteStillAppliesToItsOwnPath", Request: get(SharedHost, "/admin/users", [2]string{"cookie", "_gateway_session=" + CookieAlice}),
				Want: Want{Status: 403, CheckCalls: 1}},
		},
		{
			Scenario: Scenario{Name: "MCPServerPathOnASharedHostIsNotEscapedByCase", Request: post(SharedHost, "/Mcp", deny, [2]string{"cookie", "_gateway_session=" + CookieAlice}),
				Want: Want{Status: 400, CheckCalls: 0}},
		},
		// --- The token service's answers: anything unexpected fails closed. ---
		{
			Scenario: Scenario{Name: "OKWithoutIdentityFailsClosed", Request: post(mcp, "/mcp", toolsList, alice), Want: Want{Status: 503, CheckCalls: 1}},
			Answer:   okAnswer(anAssertion),
		},
		{
			Scenario: Scenario{Name: "OKWithoutSubjectFailsClosed", Request: post(mcp, "/mcp", toolsList, alice), Want: Want{Status: 503, CheckCalls: 1}},
			Answer:   okAnswer(`,"identity":{"email":"alice@example.com"}` + anAssertion),
		},
		{
			Scenario: Scenario{Name: "OKWithoutAssertionFailsClosed", Request: post(mcp, "/mcp", toolsList, alice), Want: Want{Status: 503, CheckCalls: 1}},
			Answer:   okAnswer(aliceIdentity),
		},
		{
			Scenario: Scenario{Name: "OKWithIdentityOfTheWrongTypeFailsClosed", Request: post(mcp, "/mcp", toolsList, alice), Want: Want{Status: 503, CheckCalls: 1}},
			Answer:   okAnswer(`,"identity":"alice"` + anAssertion),
		},
		{
			Scenario: Scenario{Name: "OKWithTrailingGarbageFailsClosed", Request: post(mcp, "/mcp", toolsList, alice), Want: Want{Status: 503, CheckCalls: 1}},
			Answer: func(string, []byte) CheckAnswer {
				return CheckAnswer{Status: 200, Body: `{"status":"ok"` + aliceIdentity + anAssertion + `}{"x":1}`}
			},
		},
		{
			Scenario: Scenario{Name: "StatusOKUnder401FailsClosed", Request: post(mcp, "/mcp", toolsList, alice), Want: Want{Status: 503, CheckCalls: 1}},
			Answer: func(string, []byte) CheckAnswer {
				return CheckAnswer{Status: 401, Body: `{"status":"ok"` + aliceIdentity + anAssertion + `}`}
			},
		},
		{
			Scenario: Scenario{Name: "UpperCaseStatusFailsClosed", Request: post(mcp, "/mcp", toolsList, alice), Want: Want{Status: 503, CheckCalls: 1}},
			Answer: func(string, []byte) CheckAnswer {
				return CheckAnswer{Status: 200, Body: `{"status":"OK"` + aliceIdentity + anAssertion + `}`}
			},
		},
		{
			Scenario: Scenario{Name: "ServerErrorFailsClosed", Request: post(mcp, "/mcp", toolsList, alice), Want: Want{Status: 503, CheckCalls: 1}},
			Answer: func(string, []byte) CheckAnswer {
				return CheckAnswer{Status: 500, Body: `{"status":"ok"` + aliceIdentity + anAssertion + `}`}
			},
		},
		{
			Scenario: Scenario{Name: "HugeAnswerFailsClosed", Request: post(mcp, "/mcp", toolsList, alice), Want: Want{Status: 503, CheckCalls: 1}},
			Answer:   okAnswer(aliceIdentity + anAssertion + `,"pad":"` + strings.Repeat("x", 70<<10) + `"`),
		},
		{
			Scenario: Scenario{Name: "OKWithoutInternalTokenOnAnUpstreamRouteIsNotForwarded", Request: post("up.example.com", "/mcp", toolsList, alice), Want: Want{Status: 403, CheckCalls: 1}},
			Answer:   okAnswer(aliceIdentity + anAssertion),
		},
		{
			Scenario: Scenario{Name: "BundleThatAlreadyExpiredIsNotUsed", Request: post(mcp, "/mcp", toolsList, alice), Want: Want{Status: 503, CheckCalls: 1}},
			Answer:   okAnswer(aliceIdentity + anAssertion + `,"expires_at":1000000000`),
		},
	}
	cases = append(cases, charsetCases()...)
	return append(cases, sessionCases()...)
}
