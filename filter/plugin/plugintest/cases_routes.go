package plugintest

// Cases of routing: which route a request's host and path select, and requests an upstream
// could read as another route's (hosts with odd ports or userinfo, dot segments, encodings,
// case), which are refused. Gateway paths go to the token service, client routes send a
// browser without a session to sign in.

// routeCases are the cases of routing.
func routeCases() []Case {
	mcp := "mcp.example.com"
	alice := bearer(TokenAlice)
	deny := deniedCall
	prm := `Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", scope="mcp"`
	return append([]Case{
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
			Name:    "CORSPreflightIsAnswered",
			Request: Request{Method: "OPTIONS", Authority: mcp, Path: "/mcp", Headers: [][2]string{{"origin", "http://localhost:6274"}, {"access-control-request-method", "POST"}}},
			Want:    Want{Status: 204, ReplyHeaders: map[string]string{"access-control-allow-origin": "http://localhost:6274"}, CheckCalls: 0},
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
			Name:    "ClientRouteExpiredSessionIsSentToSignIn",
			Request: Request{Method: "GET", Authority: "app.example.com", Path: "/", Headers: [][2]string{{"cookie", "_gateway_session=" + CookieExpired}, {"accept", "text/html"}}},
			Want:    Want{Status: 302, CheckCalls: 1},
		},
	}, attacks([]Case{
		// Hosts.
		{
			Name: "LeadingZeroPortStillReachesTheRoute", Request: post(mcp+":0443", "/mcp", deny, [2]string{"x-gateway-assertion", "forged"}),
			Want: Want{Status: 401, CheckCalls: 0},
		},
		{
			Name: "UserinfoInAuthorityStillReachesTheRoute", Request: post("user@"+mcp, "/mcp", deny),
			Want: Want{Status: 401, CheckCalls: 0},
		},
		{
			Name: "TrailingDotsStillReachTheRoute", Request: post(mcp+"..", "/mcp", deny),
			Want: Want{Status: 401, CheckCalls: 0},
		},
		{
			Name: "MalformedPortOnARouteHostIsNotWavedThrough", Request: post(mcp+":443x", "/mcp", deny),
			Want: Want{Status: 404, CheckCalls: 0},
		},
		{
			Name: "OtherPortOnARouteHostStillReachesTheRoute", Request: post(mcp+":8443", "/mcp", deny, [2]string{"x-gateway-assertion", "forged"}),
			Want: Want{Status: 401, CheckCalls: 0},
		},
		// Paths.
		{Name: "GatewayPathWithDotSegmentsIsRefused", Request: post(mcp, "/.gateway/../mcp", deny), Want: Want{Status: 400, CheckCalls: 0}},
		{Name: "ProtectedResourcePathWithDotSegmentsIsRefused", Request: post(mcp, "/.well-known/oauth-protected-resource/../../mcp", deny), Want: Want{Status: 400, CheckCalls: 0}},
		{Name: "EscapedSlashAfterGatewayPrefixIsRefused", Request: post(mcp, "/.gateway%2f..%2fmcp", deny), Want: Want{Status: 400, CheckCalls: 0}},
		{Name: "DoubleEncodedDotSegmentIsRefused", Request: get(mcp, "/mcp/%252e%252e/admin", alice), Want: Want{Status: 400, CheckCalls: 0}},
		{Name: "AbsoluteFormTargetIsRefused", Request: post(mcp, "https://"+mcp+"/mcp", deny, alice), Want: Want{Status: 400, CheckCalls: 0}},
		{Name: "UpperCaseRoutePathIsRefused", Request: post(mcp, "/MCP", deny, alice), Want: Want{Status: 400, CheckCalls: 0}},
		{Name: "PercentEncodedRoutePathIsRefused", Request: post(mcp, "/%6dcp", deny, alice), Want: Want{Status: 400, CheckCalls: 0}},
		{
			Name: "StricterRouteIsNotEscapedByPercentEncoding", Request: get(SharedHost, "/%61dmin/users", [2]string{"cookie", "_gateway_session=" + CookieAlice}),
			Want: Want{Status: 400, CheckCalls: 0},
		},
		{
			Name: "StricterRouteIsNotEscapedByCase", Request: get(SharedHost, "/ADMIN/users", [2]string{"cookie", "_gateway_session=" + CookieAlice}),
			Want: Want{Status: 400, CheckCalls: 0},
		},
		{
			Name: "StricterRouteIsNotEscapedByAPathParameter", Request: get(SharedHost, "/admin;x=1/users", [2]string{"cookie", "_gateway_session=" + CookieAlice}),
			Want: Want{Status: 400, CheckCalls: 0},
		},
		{
			Name: "StricterRouteIsNotEscapedByDotDotSemicolon", Request: get(SharedHost, "/public/..;/admin/users", [2]string{"cookie", "_gateway_session=" + CookieAlice}),
			Want: Want{Status: 400, CheckCalls: 0},
		},
		{
			Name: "StricterRouteIsNotEscapedByAParameterOnlySegment", Request: get(SharedHost, "/;/admin/users", [2]string{"cookie", "_gateway_session=" + CookieAlice}),
			Want: Want{Status: 400, CheckCalls: 0},
		},
		{
			Name: "StricterRouteStillAppliesToItsOwnPath", Request: get(SharedHost, "/admin/users", [2]string{"cookie", "_gateway_session=" + CookieAlice}),
			Want: Want{Status: 403, CheckCalls: 1},
		},
		{
			Name: "MCPServerPathOnASharedHostIsNotEscapedByCase", Request: post(SharedHost, "/Mcp", deny, [2]string{"cookie", "_gateway_session=" + CookieAlice}),
			Want: Want{Status: 400, CheckCalls: 0},
		},
	})...)
}
