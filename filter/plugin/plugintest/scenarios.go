package plugintest

import "strings"

// Request is a request as the proxy hands it to the filter.
type Request struct {
	Method    string
	Authority string
	Path      string
	Headers   [][2]string
	// Chunks is the request body as it arrives; none means a bodiless request.
	Chunks []string
	// NoContentLength leaves out Content-Length (a chunked upload).
	NoContentLength bool
}

// Want is what the client, the upstream and the log must see.
type Want struct {
	// Status is the status of a local reply; 0 means the request goes upstream.
	Status int
	// BodyContains are substrings of the local reply body.
	BodyContains []string
	// ReplyHeaders are headers of the local reply (lower-case names).
	ReplyHeaders map[string]string
	// Upstream are the headers the upstream receives; an empty value means absent.
	Upstream map[string]string
	// LogContains are substrings that the authorization log must contain.
	LogContains []string
	// LogNotContains must not appear in any log line.
	LogNotContains []string
	// CheckCalls is the number of check calls made (-1: don't care, for requests refused
	// for their body while the check may or may not have gone out, depending on the mode).
	CheckCalls int
}

// Scenario is one request and what must come of it.
type Scenario struct {
	Name    string
	Request Request
	Want    Want
}

// Result is what a runner observed.
type Result struct {
	// Forwarded is true when the request went on to the upstream.
	Forwarded bool
	// Status, ReplyHeaders and Body describe a local reply.
	Status       int
	ReplyHeaders map[string]string
	Body         string
	// Upstream are the request headers as forwarded.
	Upstream map[string]string
	// Logs are the lines the filter logged.
	Logs []string
	// CheckCalls counts the check calls.
	CheckCalls int
	// LateHeaderWrites counts request-header changes attempted after the headers went on
	// (Envoy ignores them: a bug).
	LateHeaderWrites int
	// Stuck means the stream could make no progress (a paused stream never continued).
	Stuck bool
}

func bearer(tok string) [2]string { return [2]string{"authorization", "Bearer " + tok} }

var jsonCT = [2]string{"content-type", "application/json"}

func post(authority, path string, body string, headers ...[2]string) Request {
	return Request{Method: "POST", Authority: authority, Path: path, Headers: append([][2]string{jsonCT}, headers...), Chunks: []string{body}}
}

func toolsCall(id, tool string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":{"text":"hi"}}}`
}

const toolsList = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`

// Scenarios returns every scenario. Names say the behaviour.
func Scenarios() []Scenario {
	mcp := "mcp.example.com"
	prm := `Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"`
	return []Scenario{
		{
			Name:    "ForeignHostPassesUntouched",
			Request: Request{Method: "GET", Authority: "other.example.net", Path: "/mcp", Headers: [][2]string{{"x-gateway-assertion", "forged"}}},
			Want:    Want{Upstream: map[string]string{"x-gateway-assertion": "forged"}, CheckCalls: 0},
		},
		{
			Name:    "GatewayPathGoesToTokenService",
			Request: Request{Method: "GET", Authority: mcp, Path: "/.well-known/oauth-protected-resource/mcp"},
			Want:    Want{CheckCalls: 0},
		},
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
			Name:    "InvalidTokenGets401InvalidToken",
			Request: post(mcp, "/mcp", toolsList, bearer(TokenInvalid)),
			Want: Want{Status: 401, CheckCalls: 1, ReplyHeaders: map[string]string{
				"www-authenticate": `Bearer error="invalid_token", error_description="the access token is invalid, expired or not meant for this server", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"`}},
		},
		{
			Name:    "TokenServiceDownFailsClosed",
			Request: post(mcp, "/mcp", toolsCall("1", "echo"), bearer(TokenServiceDown)),
			Want:    Want{Status: 503, CheckCalls: 1},
		},
		{
			Name:    "TokenServiceGarbageFailsClosed",
			Request: post(mcp, "/mcp", toolsCall("1", "echo"), bearer(TokenGarbage)),
			Want:    Want{Status: 503, CheckCalls: 1},
		},
		{
			Name:    "AllowedToolIsForwardedWithAssertionAndWithoutTheExternalToken",
			Request: post(mcp, "/mcp", toolsCall("1", "echo"), bearer(TokenAlice), [2]string{"x-gateway-assertion", "forged"}),
			Want: Want{
				Upstream: map[string]string{"authorization": "", "x-gateway-assertion": AssertionForPrefix + mcp},
				LogContains: []string{`"message":"authorize check"`, `"service":"authorize"`, `"request-id":"` + RequestID + `"`, `"user":"alice"`,
					`"email":"alice@example.com"`, `"allow":true`, `"mcp-method":"tools/call"`, `"mcp-tool":"echo"`, `"mcp-tool-parameters":{"text":"hi"}`, `"mcp-tool-ok"`, `"domain-ok"`},
				LogNotContains: []string{TokenAlice},
				CheckCalls:     1,
			},
		},
		{
			Name:    "DeniedToolGets403JSONRPCErrorEchoingIDAndRequestID",
			Request: post(mcp, "/mcp", toolsCall(`"call-9"`, "delete_everything"), bearer(TokenAlice)),
			Want: Want{
				Status:       403,
				BodyContains: []string{`"id":"call-9"`, `"code":-32001`, `"request-id":"` + RequestID + `"`, `delete_everything`},
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
			Name:    "ContentLengthOverLimitGets413BeforeBuffering",
			Request: Request{Method: "POST", Authority: "tiny.example.com", Path: "/mcp", Headers: [][2]string{jsonCT, bearer(TokenAlice), {"content-length", "101"}}, Chunks: []string{strings.Repeat(" ", 101)}},
			Want:    Want{Status: 413, CheckCalls: 0},
		},
		{
			Name:    "ChunkedBodyGrowingPastLimitGets413",
			Request: Request{Method: "POST", Authority: "tiny.example.com", Path: "/mcp", NoContentLength: true, Headers: [][2]string{jsonCT, bearer(TokenAlice)}, Chunks: []string{strings.Repeat(" ", 60), strings.Repeat(" ", 60), toolsList}},
			Want:    Want{Status: 413, CheckCalls: -1},
		},
		{
			Name:    "NotJSONGets400ParseError",
			Request: post(mcp, "/mcp", `{"jsonrpc":"2.0",`, bearer(TokenAlice)),
			Want:    Want{Status: 400, BodyContains: []string{`-32700`}, CheckCalls: -1},
		},
		{
			Name:    "EmptyPOSTGets400",
			Request: Request{Method: "POST", Authority: mcp, Path: "/mcp", Headers: [][2]string{jsonCT, bearer(TokenAlice)}},
			Want:    Want{Status: 400, BodyContains: []string{`-32700`}, CheckCalls: 0},
		},
		{
			Name:    "DuplicateMethodKeyIsRefused",
			Request: post(mcp, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call","params":{"name":"rm"}}`, bearer(TokenAlice)),
			Want:    Want{Status: 400, BodyContains: []string{`-32600`}, CheckCalls: -1},
		},
		{
			Name:    "EscapedMethodIsStillATool",
			Request: post(mcp, "/mcp", `{"jsonrpc":"2.0","id":3,"method":"tools\u002fcall","params":{"name":"rm\u0020-rf"}}`, bearer(TokenAlice)),
			Want:    Want{Status: 403, LogContains: []string{`"mcp-tool":"rm -rf"`}, CheckCalls: 1},
		},
		{
			Name:    "BatchWithOneDeniedToolIsDenied",
			Request: post(mcp, "/mcp", `[`+toolsCall("1", "echo")+`,`+toolsCall("2", "shutdown")+`]`, bearer(TokenAlice)),
			Want:    Want{Status: 403, BodyContains: []string{`[{`, `"id":2`}, CheckCalls: 1},
		},
		{
			Name:    "BatchOfAllowedMessagesIsForwarded",
			Request: post(mcp, "/mcp", `[`+toolsCall("1", "echo")+`,`+toolsList+`]`, bearer(TokenAlice)),
			Want:    Want{Upstream: map[string]string{"authorization": ""}, CheckCalls: 1},
		},
		{
			Name:    "SSEGetIsForwardedAsNonToolRequest",
			Request: Request{Method: "GET", Authority: mcp, Path: "/mcp", Headers: [][2]string{bearer(TokenAlice), {"accept", "text/event-stream"}}},
			Want:    Want{Upstream: map[string]string{"authorization": ""}, LogContains: []string{`"mcp-method":""`}, CheckCalls: 1},
		},
		{
			Name:    "CORSPreflightIsAnswered",
			Request: Request{Method: "OPTIONS", Authority: mcp, Path: "/mcp", Headers: [][2]string{{"origin", "http://localhost:6274"}, {"access-control-request-method", "POST"}}},
			Want:    Want{Status: 204, ReplyHeaders: map[string]string{"access-control-allow-origin": "http://localhost:6274"}, CheckCalls: 0},
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
		{
			Name:    "DotSegmentsAreRefused",
			Request: Request{Method: "GET", Authority: mcp, Path: "/mcp/../admin", Headers: [][2]string{bearer(TokenAlice)}},
			Want:    Want{Status: 400, CheckCalls: 0},
		},
		{
			Name:    "EncodedDotSegmentsAreRefused",
			Request: Request{Method: "GET", Authority: mcp, Path: "/mcp/%2e%2e/admin", Headers: [][2]string{bearer(TokenAlice)}},
			Want:    Want{Status: 400, CheckCalls: 0},
		},
		{
			Name:    "UnroutedPathOnGatewayHostGets404",
			Request: Request{Method: "GET", Authority: mcp, Path: "/admin", Headers: [][2]string{bearer(TokenAlice)}},
			Want:    Want{Status: 404, CheckCalls: 0},
		},
		{
			Name:    "PrefixMatchesOnSegmentBoundaryOnly",
			Request: Request{Method: "GET", Authority: mcp, Path: "/mcpx", Headers: [][2]string{bearer(TokenAlice)}},
			Want:    Want{Status: 404, CheckCalls: 0},
		},
		{
			Name:    "MixedCaseHostDefaultPortAndTrailingDotStillMatch",
			Request: post("MCP.Example.COM.:443", "/mcp", toolsList),
			Want:    Want{Status: 401, ReplyHeaders: map[string]string{"www-authenticate": prm}, CheckCalls: 0},
		},
		{
			Name:    "UpstreamOAuthRouteForwardsTheInternalToken",
			Request: post("up.example.com", "/mcp", toolsCall("1", "anything"), bearer(TokenAlice)),
			Want:    Want{Upstream: map[string]string{"authorization": "Bearer " + InternalToken}, LogNotContains: []string{InternalToken}, CheckCalls: 1},
		},
		{
			Name:    "UpstreamOAuthRouteWithoutConnectionGets403WithConnectURL",
			Request: post("up.example.com", "/mcp", toolsList, bearer(TokenNoUpstream)),
			Want:    Want{Status: 403, BodyContains: []string{"upstream_authorization_required", "/.gateway/mcp/connect"}, CheckCalls: 1},
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
		{
			Name:    "ClientRouteBrowserWithoutSessionIsSentToSignIn",
			Request: Request{Method: "GET", Authority: "app.example.com", Path: "/dashboard?x=1", Headers: [][2]string{{"accept", "text/html,application/xhtml+xml"}}},
			Want:    Want{Status: 302, ReplyHeaders: map[string]string{"location": "https://app.example.com/.gateway/sign_in?return_to=%2Fdashboard%3Fx%3D1"}, CheckCalls: 0},
		},
		{
			Name:    "ClientRouteAPIWithoutSessionGets401",
			Request: Request{Method: "GET", Authority: "app.example.com", Path: "/api/things", Headers: [][2]string{{"accept", "application/json"}}},
			Want:    Want{Status: 401, CheckCalls: 0},
		},
		{
			Name: "ClientRouteSessionReachesBackendWithExternalToken",
			Request: Request{Method: "GET", Authority: "app.example.com", Path: "/api/things", Headers: [][2]string{
				{"cookie", "theme=dark; _gateway_session=" + CookieAlice}, {"authorization", "Bearer forged"}}},
			Want: Want{Upstream: map[string]string{"authorization": "Bearer " + ClientExternalTE, "cookie": "theme=dark", "x-gateway-assertion": AssertionForPrefix + "app.example.com"}, CheckCalls: 1},
		},
		{
			Name:    "ClientRouteExpiredSessionIsSentToSignIn",
			Request: Request{Method: "GET", Authority: "app.example.com", Path: "/", Headers: [][2]string{{"cookie", "_gateway_session=" + CookieExpired}, {"accept", "text/html"}}},
			Want:    Want{Status: 302, CheckCalls: 1},
		},
	}
}
