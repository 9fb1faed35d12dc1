package plugintest

import (
	"strings"
)

// Cases of the token service: its answers decide, anything unexpected in them fails closed,
// and the decision bundle it returns is cached per credential and route, never served to
// another.

// tokenServiceCases are the cases of check calls, their answers and the decision cache.
func tokenServiceCases() []Case {
	mcp := "mcp.example.com"
	alice := bearer(TokenAlice)
	return append([]Case{
		{
			Name:    "InvalidTokenGets401InvalidToken",
			Request: post(mcp, "/mcp", toolsList, bearer(TokenInvalid)),
			Want: Want{Status: 401, CheckCalls: 1, ReplyHeaders: map[string]string{
				"www-authenticate": `Bearer error="invalid_token", error_description="the access token is invalid, expired or not meant for this server", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", scope="mcp"`}},
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
			Name:    "UpstreamOAuthRouteForwardsTheInternalToken",
			Request: post("up.example.com", "/mcp", toolsCall("1", "anything"), bearer(TokenAlice)),
			Want:    Want{Upstream: map[string]string{"authorization": "Bearer " + InternalToken}, LogNotContains: []string{InternalToken}, CheckCalls: 1},
		},
		{
			Name:    "UpstreamOAuthRouteWithoutConnectionGets401InvalidTokenWithResourceMetadata",
			Request: post("up.example.com", "/mcp", toolsList, bearer(TokenNoUpstream)),
			Want: Want{Status: 401, BodyContains: []string{"invalid_token"}, CheckCalls: 1,
				ReplyHeaders: map[string]string{"www-authenticate": `Bearer error="invalid_token", error_description="the upstream service must be connected again; sign in again", resource_metadata="https://up.example.com/.well-known/oauth-protected-resource/mcp", scope="mcp"`}},
		},
	}, attacks([]Case{
		// The decision cache.
		{
			Name: "CookieValueAsBearerTokenIsNotServedFromTheCookieCacheEntry", Request: post(mcp, "/mcp", toolsList, bearer(CookieAlice)),
			Want:   Want{Status: 401, CheckCalls: 1},
			Before: []Request{get("app.example.com", "/", [2]string{"cookie", "_gateway_session=" + CookieAlice})},
		},
		{
			Name: "CachedBundleOfOneUserIsNotServedToAnother", Request: post(mcp, "/mcp", toolsList, bearer(TokenBob)),
			Want:   Want{Status: 403, LogContains: []string{`"user":"bob"`}, CheckCalls: 1},
			Before: []Request{post(mcp, "/mcp", toolsList, alice)},
		},
		{
			Name: "CachedBundleOfOneRouteIsNotServedToAnother", Request: post(SharedHost, "/mcp", toolsList, alice),
			Want:   Want{Upstream: map[string]string{"x-gateway-assertion": AssertionForPrefix + SharedHost}, CheckCalls: 1},
			Before: []Request{post(mcp, "/mcp", toolsList, alice)},
		},
		// Answers: anything unexpected fails closed.
		{
			Name: "OKWithoutIdentityFailsClosed", Request: post(mcp, "/mcp", toolsList, alice), Want: Want{Status: 503, CheckCalls: 1},
			Answer: okAnswer(anAssertion),
		},
		{
			Name: "OKWithoutSubjectFailsClosed", Request: post(mcp, "/mcp", toolsList, alice), Want: Want{Status: 503, CheckCalls: 1},
			Answer: okAnswer(`,"identity":{"email":"alice@example.com"}` + anAssertion),
		},
		{
			Name: "OKWithoutAssertionFailsClosed", Request: post(mcp, "/mcp", toolsList, alice), Want: Want{Status: 503, CheckCalls: 1},
			Answer: okAnswer(aliceIdentity),
		},
		{
			Name: "OKWithIdentityOfTheWrongTypeFailsClosed", Request: post(mcp, "/mcp", toolsList, alice), Want: Want{Status: 503, CheckCalls: 1},
			Answer: okAnswer(`,"identity":"alice"` + anAssertion),
		},
		{
			Name: "OKWithTrailingGarbageFailsClosed", Request: post(mcp, "/mcp", toolsList, alice), Want: Want{Status: 503, CheckCalls: 1},
			Answer: func(string, []byte) CheckAnswer {
				return CheckAnswer{Status: 200, Body: `{"status":"ok"` + aliceIdentity + anAssertion + `}{"x":1}`}
			},
		},
		{
			Name: "StatusOKUnder401FailsClosed", Request: post(mcp, "/mcp", toolsList, alice), Want: Want{Status: 503, CheckCalls: 1},
			Answer: func(string, []byte) CheckAnswer {
				return CheckAnswer{Status: 401, Body: `{"status":"ok"` + aliceIdentity + anAssertion + `}`}
			},
		},
		{
			Name: "UpperCaseStatusFailsClosed", Request: post(mcp, "/mcp", toolsList, alice), Want: Want{Status: 503, CheckCalls: 1},
			Answer: func(string, []byte) CheckAnswer {
				return CheckAnswer{Status: 200, Body: `{"status":"OK"` + aliceIdentity + anAssertion + `}`}
			},
		},
		{
			Name: "ServerErrorFailsClosed", Request: post(mcp, "/mcp", toolsList, alice), Want: Want{Status: 503, CheckCalls: 1},
			Answer: func(string, []byte) CheckAnswer {
				return CheckAnswer{Status: 500, Body: `{"status":"ok"` + aliceIdentity + anAssertion + `}`}
			},
		},
		{
			Name: "HugeAnswerFailsClosed", Request: post(mcp, "/mcp", toolsList, alice), Want: Want{Status: 503, CheckCalls: 1},
			Answer: okAnswer(aliceIdentity + anAssertion + `,"pad":"` + strings.Repeat("x", 70<<10) + `"`),
		},
		{
			Name: "OKWithoutInternalTokenOnAnUpstreamRouteIsNotForwarded", Request: post("up.example.com", "/mcp", toolsList, alice), Want: Want{Status: 401, BodyContains: []string{"invalid_token"}, CheckCalls: 1},
			Answer: okAnswer(aliceIdentity + anAssertion),
		},
		{
			Name: "BundleThatAlreadyExpiredIsNotUsed", Request: post(mcp, "/mcp", toolsList, alice), Want: Want{Status: 503, CheckCalls: 1},
			Answer: okAnswer(aliceIdentity + anAssertion + `,"expires_at":1000000000`),
		},
	})...)
}
