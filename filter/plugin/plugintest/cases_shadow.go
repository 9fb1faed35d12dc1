package plugintest

// Cases of shadow policies (docs/policy.md, "Shadow policies"): a route's policy_shadow is
// evaluated beside its policy on every message, recorded (shadow-allow and its reasons) and
// counted when it disagrees, and never changes what happens to the request.

func shadowCases() []Case {
	alice, bob := bearer(TokenAlice), bearer(TokenBob)
	strict, lax := ShadowStrictHost, ShadowLaxHost
	const (
		wouldDeny       = "mcp_gateway_shadow_would_deny"
		wouldAllow      = "mcp_gateway_shadow_would_allow"
		strictWouldDeny = "mcp_gateway.route.shadow_strict_example_com.shadow_would_deny"
		laxWouldAllow   = "mcp_gateway.route.shadow_lax_example_com.shadow_would_allow"
	)
	return []Case{
		{
			Name:    "ShadowStricterThanPolicyRecordsWouldDenyAndForwards",
			Request: post(strict, "/mcp", toolsCall("1", "subtract"), alice),
			Want: Want{
				CheckCalls: 1,
				LogContains: []string{`"allow":true`, `"mcp-tool":"subtract"`,
					`"shadow-allow":false,"shadow-allow-why-true":["domain-ok"],"shadow-allow-why-false":["mcp-tool-unauthorized"],"shadow-deny":true,"shadow-deny-why-false":[]`},
				Counters: []string{wouldDeny, strictWouldDeny, "mcp_gateway_authorize_allowed"},
			},
		},
		{
			Name:    "ShadowStricterForAnotherDomainRecordsItsReason",
			Request: post(strict, "/mcp", toolsCall("1", "echo"), bob),
			Want: Want{
				CheckCalls:  1,
				LogContains: []string{`"user":"bob"`, `"allow":true`, `"shadow-allow":false`, `"domain-unauthorized"`},
				Counters:    []string{wouldDeny},
			},
		},
		{
			Name:    "ShadowAgreeingIsRecordedAndNotCounted",
			Request: post(strict, "/mcp", toolsCall("1", "echo"), alice),
			Want: Want{
				CheckCalls:        1,
				LogContains:       []string{`"allow":true`, `"shadow-allow":true,"shadow-allow-why-true":["domain-ok","mcp-tool-ok"]`},
				CountersUnchanged: []string{wouldDeny, wouldAllow},
			},
		},
		{
			Name:    "ShadowNeverLetsADeniedCallThrough",
			Request: post(lax, "/mcp", toolsCall(`"c1"`, "delete_everything"), alice),
			Want: Want{
				Status:       200,
				BodyContains: []string{`"isError":true`},
				LogContains:  []string{`"allow":false`, `"shadow-allow":true,"shadow-allow-why-true":["authenticated-user"]`},
				Counters:     []string{wouldAllow, laxWouldAllow, "mcp_gateway_authorize_denied"},
				CheckCalls:   1,
			},
		},
		{
			Name:    "ShadowLaxerNeverLetsADeniedUserThrough",
			Request: post(lax, "/mcp", toolsList, bob),
			Want: Want{
				Status:      403,
				LogContains: []string{`"allow":false`, `"domain-unauthorized"`, `"shadow-allow":true`},
				Counters:    []string{wouldAllow},
				CheckCalls:  1,
			},
		},
		{
			Name:    "ShadowIsEvaluatedForEveryMessageOfABatch",
			Request: post(strict, "/mcp", `[`+toolsCall("1", "echo")+`,`+toolsCall("2", "subtract")+`]`, alice),
			Want: Want{
				CheckCalls:  1,
				LogContains: []string{`"mcp-tool":"echo"`, `"shadow-allow":true`, `"mcp-tool":"subtract"`, `"shadow-allow":false`},
				Counters:    []string{wouldDeny},
			},
		},
		{
			Name:    "ShadowIsEvaluatedOnTheEventStreamGET",
			Request: get(strict, "/mcp", bob, [2]string{"accept", "text/event-stream"}),
			Want: Want{
				CheckCalls:  1,
				LogContains: []string{`"mcp-method":"GET"`, `"allow":true`, `"shadow-allow":false`, `"domain-unauthorized"`},
				Counters:    []string{wouldDeny},
			},
		},
		{
			Name:    "RouteWithoutShadowRecordsNoShadowFields",
			Request: post("mcp.example.com", "/mcp", toolsCall("1", "echo"), alice),
			Want: Want{
				CheckCalls:        1,
				LogNotContains:    []string{"shadow-"},
				CountersUnchanged: []string{wouldDeny, wouldAllow},
			},
		},
	}
}
