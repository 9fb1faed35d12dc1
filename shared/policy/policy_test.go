package policy

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// mustParse parses a policy written in YAML (JSON is YAML too), the way the token service
// reads it.
func mustParse(tb testing.TB, src string) *Policy {
	tb.Helper()
	var v any
	if err := yaml.Unmarshal([]byte(src), &v); err != nil {
		tb.Fatalf("yaml: %v", err)
	}
	p, err := Parse(v)
	if err != nil {
		tb.Fatalf("Parse: %v", err)
	}
	return p
}

const recommended = `
allow:
  and:
    - domain: {is: example.com}
deny:
  or:
    - mcp_tool: {not_in: [search, fetch]}
`

func alice(method, tool string) *Input {
	return &Input{
		Authenticated: true, User: "u-alice", Email: "alice@example.com", Name: "Alice",
		Groups:    []string{"eng", "admins"},
		Claims:    map[string][]string{"email_verified": {"true"}, "tier": {"gold", "beta"}},
		MCPMethod: method, MCPTool: tool,
	}
}

func rs(rr ...Reason) Reasons {
	var s Reasons
	for _, r := range rr {
		s = s.Add(r)
	}
	return s
}

func TestEvaluate_RecommendedPattern(t *testing.T) {
	t.Parallel()
	p := mustParse(t, recommended)
	tests := []struct {
		name string
		in   *Input
		want Decision
	}{
		{"listed tool is allowed", alice("tools/call", "search"), Decision{
			Allow:        true,
			AllowWhyTrue: rs(ReasonDomainOK, ReasonMCPToolOK),
			DenyWhyFalse: rs(ReasonMCPToolOK),
		}},
		{"other tool is blocked", alice("tools/call", "delete_repo"), Decision{
			Deny:          true,
			AllowWhyTrue:  rs(ReasonDomainOK),
			AllowWhyFalse: rs(ReasonMCPToolUnauthorized),
			DenyWhyTrue:   rs(ReasonMCPToolUnauthorized),
		}},
		{"tool names are case-sensitive", alice("tools/call", "Search"), Decision{
			Deny:          true,
			AllowWhyTrue:  rs(ReasonDomainOK),
			AllowWhyFalse: rs(ReasonMCPToolUnauthorized),
			DenyWhyTrue:   rs(ReasonMCPToolUnauthorized),
		}},
		{"tools/list passes", alice("tools/list", ""), Decision{
			Allow:        true,
			AllowWhyTrue: rs(ReasonDomainOK, ReasonMCPToolNotAToolCall),
			DenyWhyFalse: rs(ReasonMCPToolNotAToolCall),
		}},
		{"initialize passes", alice("initialize", ""), Decision{
			Allow:        true,
			AllowWhyTrue: rs(ReasonDomainOK, ReasonMCPToolNotAToolCall),
			DenyWhyFalse: rs(ReasonMCPToolNotAToolCall),
		}},
		{"resources/list passes even with a stray tool", alice("resources/list", "delete_repo"), Decision{
			Allow:        true,
			AllowWhyTrue: rs(ReasonDomainOK, ReasonMCPToolNotAToolCall),
			DenyWhyFalse: rs(ReasonMCPToolNotAToolCall),
		}},
		{"no MCP message passes", alice("", ""), Decision{
			Allow:        true,
			AllowWhyTrue: rs(ReasonDomainOK, ReasonMCPToolNotAToolCall),
			DenyWhyFalse: rs(ReasonMCPToolNotAToolCall),
		}},
		{"other domain is refused", &Input{Authenticated: true, Email: "bob@evil.com", MCPMethod: "tools/call", MCPTool: "search"}, Decision{
			AllowWhyFalse: rs(ReasonDomainUnauthorized),
			DenyWhyFalse:  rs(ReasonMCPToolOK),
		}},
		{"look-alike domain is refused", &Input{Authenticated: true, Email: "bob@example.com.evil.com", MCPMethod: "tools/list"}, Decision{
			AllowWhyFalse: rs(ReasonDomainUnauthorized),
			DenyWhyFalse:  rs(ReasonMCPToolNotAToolCall),
		}},
		{"domain is case-insensitive", &Input{Authenticated: true, Email: "Bob@Example.COM", MCPMethod: "tools/list"}, Decision{
			Allow:        true,
			AllowWhyTrue: rs(ReasonDomainOK, ReasonMCPToolNotAToolCall),
			DenyWhyFalse: rs(ReasonMCPToolNotAToolCall),
		}},
		{"Unicode case folding is not applied", &Input{Authenticated: true, Email: "bob@example.co\u1e3f", MCPMethod: "tools/list"}, Decision{
			AllowWhyFalse: rs(ReasonDomainUnauthorized),
			DenyWhyFalse:  rs(ReasonMCPToolNotAToolCall),
		}},
		{"unauthenticated is refused", &Input{MCPMethod: "tools/call", MCPTool: "search"}, Decision{
			AllowWhyFalse: rs(ReasonUserUnauthenticated),
			DenyWhyFalse:  rs(ReasonMCPToolOK),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := p.Evaluate(tt.in); got != tt.want {
				t.Errorf("Evaluate =\n %s\nwant\n %s", describe(got), describe(tt.want))
			}
		})
	}
}

func describe(d Decision) string {
	return "allow=" + boolStr(d.Allow) + " deny=" + boolStr(d.Deny) +
		" allow-why-true=" + strings.Join(d.AllowWhyTrue.Strings(), ",") +
		" allow-why-false=" + strings.Join(d.AllowWhyFalse.Strings(), ",") +
		" deny-why-true=" + strings.Join(d.DenyWhyTrue.Strings(), ",") +
		" deny-why-false=" + strings.Join(d.DenyWhyFalse.Strings(), ",")
}

func boolStr(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// docs/policy.md: using mcp_tool only under allow makes non-tool requests fail the allow condition.
func TestEvaluate_MCPToolOnlyUnderAllowBlocksNonToolRequests(t *testing.T) {
	t.Parallel()
	p := mustParse(t, `
allow:
  and:
    - domain: {is: example.com}
    - mcp_tool: {in: [search]}
`)
	for _, method := range []string{"tools/list", "initialize", "resources/list", "notifications/initialized"} {
		d := p.Evaluate(alice(method, ""))
		if d.Allow || d.AllowWhyFalse != rs(ReasonMCPToolNotAToolCall) {
			t.Errorf("%s: got %s, want refused with mcp-tool-not-a-tool-call", method, describe(d))
		}
	}
	d := p.Evaluate(alice("tools/call", "search"))
	if !d.Allow || d.AllowWhyTrue != rs(ReasonDomainOK, ReasonMCPToolOK) {
		t.Errorf("tools/call search: got %s", describe(d))
	}
	d = p.Evaluate(alice("tools/call", "other"))
	if d.Allow || d.AllowWhyFalse != rs(ReasonMCPToolUnauthorized) {
		t.Errorf("tools/call other: got %s", describe(d))
	}
	// The fix docs/policy.md suggests: a separate allow clause for non-tool requests.
	p = mustParse(t, `
allow:
  and:
    - domain: {is: example.com}
  or:
    - mcp_tool: {in: [search]}
    - not: [{mcp_tool: {starts_with: "x"}}, {mcp_tool: {not_in: []}}]
`)
	if d := p.Evaluate(alice("tools/list", "")); !d.Allow {
		t.Errorf("with the extra clause tools/list: got %s", describe(d))
	}
	if d := p.Evaluate(alice("tools/call", "xdelete")); d.Allow {
		t.Errorf("with the extra clause tools/call xdelete: got %s", describe(d))
	}
}

// mcp_tool is false for non-tool requests whatever its operator, not_in included, and in
// whatever context.
func TestEvaluate_MCPToolFalseForEveryNonToolMethod(t *testing.T) {
	t.Parallel()
	for _, op := range []string{`{is: a}`, `{starts_with: a}`, `{ends_with: a}`, `{contains: a}`, `{in: [a]}`, `{not_in: [a]}`, `{not_in: []}`} {
		allow := mustParse(t, `{allow: {and: [{mcp_tool: `+op+`}]}}`)
		deny := mustParse(t, `{allow: {and: [{accept: true}]}, deny: {and: [{mcp_tool: `+op+`}]}}`)
		for _, method := range []string{"tools/list", "tools/call ", "Tools/Call", "", "resources/read"} {
			in := &Input{MCPMethod: method, MCPTool: "a"}
			if d := allow.Evaluate(in); d.Allow || d.AllowWhyFalse != rs(ReasonMCPToolNotAToolCall) {
				t.Errorf("allow %s, method %q: %s", op, method, describe(d))
			}
			if d := deny.Evaluate(in); !d.Allow || d.Deny || d.DenyWhyFalse != rs(ReasonMCPToolNotAToolCall) {
				t.Errorf("deny %s, method %q: %s", op, method, describe(d))
			}
		}
	}
}

func TestEvaluate_Criteria(t *testing.T) {
	t.Parallel()
	tests := []struct {
		policy string
		in     *Input
		allow  bool
		why    Reasons // AllowWhyTrue when allowed, AllowWhyFalse otherwise
	}{
		{`{allow: {and: [{accept: true}]}}`, &Input{}, true, rs(ReasonAccept)},
		{`{allow: {and: [{authenticated_user: true}]}}`, alice("", ""), true, rs(ReasonAuthenticatedUser)},
		{`{allow: {and: [{authenticated_user: true}]}}`, &Input{}, false, rs(ReasonUserUnauthenticated)},
		{`{allow: {and: [{email: {is: Alice@Example.com}}]}}`, alice("", ""), true, rs(ReasonEmailOK)},
		{`{allow: {and: [{email: {is: bob@example.com}}]}}`, alice("", ""), false, rs(ReasonEmailUnauthorized)},
		{`{allow: {and: [{email: {ends_with: "@EXAMPLE.com"}}]}}`, alice("", ""), true, rs(ReasonEmailOK)},
		{`{allow: {and: [{email: {in: [x@y.z, ALICE@example.com]}}]}}`, alice("", ""), true, rs(ReasonEmailOK)},
		{`{allow: {and: [{email: {is: alice@example.com}}]}}`, &Input{Email: "alice@example.com"}, false, rs(ReasonUserUnauthenticated)},
		{`{allow: {and: [{domain: {in: [a.com, example.com]}}]}}`, alice("", ""), true, rs(ReasonDomainOK)},
		{`{allow: {and: [{domain: {not_in: [example.com]}}]}}`, alice("", ""), false, rs(ReasonDomainUnauthorized)},
		{`{allow: {and: [{domain: {ends_with: ".com"}}]}}`, alice("", ""), true, rs(ReasonDomainOK)},
		{`{allow: {and: [{domain: {is: example.com}}]}}`, &Input{Authenticated: true, Email: "example.com"}, false, rs(ReasonDomainUnauthorized)},
		{`{allow: {and: [{domain: {is: example.com}}]}}`, &Input{Authenticated: true, Email: "a@b@example.com"}, true, rs(ReasonDomainOK)},
		{`{allow: {and: [{user: {is: u-alice}}]}}`, alice("", ""), true, rs(ReasonUserOK)},
		{`{allow: {and: [{user: {is: U-ALICE}}]}}`, alice("", ""), false, rs(ReasonUserUnauthorized)},
		{`{allow: {and: [{user: {starts_with: u-, not_in: [u-bob]}}]}}`, alice("", ""), true, rs(ReasonUserOK)},
		{`{allow: {and: [{user: {starts_with: u-, not_in: [u-alice]}}]}}`, alice("", ""), false, rs(ReasonUserUnauthorized)},
		{`{allow: {and: [{groups: {has: admins}}]}}`, alice("", ""), true, rs(ReasonGroupsOK)},
		{`{allow: {and: [{groups: {has: Admins}}]}}`, alice("", ""), false, rs(ReasonGroupsUnauthorized)},
		{`{allow: {and: [{claim/email_verified: true}]}}`, alice("", ""), true, rs(ReasonClaimOK)},
		{`{allow: {and: [{claim/tier: [silver, beta]}]}}`, alice("", ""), true, rs(ReasonClaimOK)},
		{`{allow: {and: [{claim/tier: silver}]}}`, alice("", ""), false, rs(ReasonClaimUnauthorized)},
		{`{allow: {and: [{claim/missing: x}]}}`, alice("", ""), false, rs(ReasonClaimUnauthorized)},
		{`{allow: {and: [{claim/level: 3}]}}`, &Input{Authenticated: true, Claims: map[string][]string{"level": {"3"}}}, true, rs(ReasonClaimOK)},
		{`{allow: {and: [{mcp_tool: {is: search}}]}}`, alice("tools/call", "search"), true, rs(ReasonMCPToolOK)},
		{`{allow: {and: [{mcp_tool: {starts_with: get_}}]}}`, alice("tools/call", "get_issue"), true, rs(ReasonMCPToolOK)},
		{`{allow: {and: [{mcp_tool: {ends_with: _issue}}]}}`, alice("tools/call", "get_issue"), true, rs(ReasonMCPToolOK)},
		{`{allow: {and: [{mcp_tool: {contains: t_i}}]}}`, alice("tools/call", "get_issue"), true, rs(ReasonMCPToolOK)},
		{`{allow: {and: [{mcp_tool: {contains: issues}}]}}`, alice("tools/call", "get_issue"), false, rs(ReasonMCPToolUnauthorized)},
		{`{allow: {and: [{mcp_tool: {in: [a, b]}}]}}`, alice("tools/call", "b"), true, rs(ReasonMCPToolOK)},
		{`{allow: {and: [{mcp_tool: {not_in: [a, b]}}]}}`, alice("tools/call", "b"), false, rs(ReasonMCPToolUnauthorized)},
		{`{allow: {and: [{mcp_tool: {starts_with: get_, ends_with: _issue}}]}}`, alice("tools/call", "get_pr"), false, rs(ReasonMCPToolUnauthorized)},
	}
	for _, tt := range tests {
		d := mustParse(t, tt.policy).Evaluate(tt.in)
		why := d.AllowWhyFalse
		if d.Allow {
			why = d.AllowWhyTrue
		}
		if d.Allow != tt.allow || why != tt.why {
			t.Errorf("%s with %+v: got %s, want allow=%v why=%v", tt.policy, *tt.in, describe(d), tt.allow, tt.why.Strings())
		}
	}
}

func TestEvaluate_Operators(t *testing.T) {
	t.Parallel()
	a := `{email: {is: alice@example.com}}` // true for alice
	b := `{groups: {has: nobody}}`          // false for alice
	tests := []struct {
		block string
		allow bool
		why   Reasons
	}{
		{`{and: [` + a + `]}`, true, rs(ReasonEmailOK)},
		{`{and: [` + a + `, ` + b + `]}`, false, rs(ReasonGroupsUnauthorized)},
		{`{or: [` + a + `, ` + b + `]}`, true, rs(ReasonEmailOK)},
		{`{or: [` + b + `]}`, false, rs(ReasonGroupsUnauthorized)},
		// not (as in Pomerium): no element holds. Inside it a true criterion pushes towards
		// refusing.
		{`{not: [` + a + `, ` + b + `]}`, false, rs(ReasonEmailUnauthorized)},
		{`{not: [` + b + `, ` + b + `]}`, true, rs(ReasonGroupsOK)},
		{`{not: [` + a + `]}`, false, rs(ReasonEmailUnauthorized)},
		// nor (as in Pomerium): some element does not hold.
		{`{nor: [` + b + `]}`, true, rs(ReasonGroupsOK)},
		{`{nor: [` + a + `, ` + b + `]}`, true, rs(ReasonGroupsOK)},
		{`{nor: [` + a + `, ` + a + `]}`, false, rs(ReasonEmailUnauthorized)},
		// Several keys in one block must all hold.
		{`{and: [` + a + `], or: [` + b + `]}`, false, rs(ReasonGroupsUnauthorized)},
		{`{and: [` + a + `], nor: [` + b + `]}`, true, rs(ReasonEmailOK, ReasonGroupsOK)},
		// Nested blocks in lists.
		{`{and: [{or: [` + b + `, {and: [` + a + `]}]}]}`, true, rs(ReasonEmailOK)},
		{`{or: [{not: [` + a + `]}, {nor: [` + a + `]}]}`, false, rs(ReasonEmailUnauthorized)},
		{`{and: [{not: [{nor: [` + a + `]}]}]}`, true, rs(ReasonEmailOK)},
		{`{and: [{and: [` + a + `], nor: [` + b + `]}]}`, true, rs(ReasonEmailOK, ReasonGroupsOK)},
	}
	for _, tt := range tests {
		d := mustParse(t, `{allow: `+tt.block+`}`).Evaluate(alice("", ""))
		why := d.AllowWhyFalse
		if d.Allow {
			why = d.AllowWhyTrue
		}
		if d.Allow != tt.allow || why != tt.why {
			t.Errorf("allow %s: got %s, want allow=%v why=%v", tt.block, describe(d), tt.allow, tt.why.Strings())
		}
		// The same block under deny decides the other way, with the reasons inverted.
		d = mustParse(t, `{allow: {and: [{accept: true}]}, deny: `+tt.block+`}`).Evaluate(alice("", ""))
		if d.Deny != tt.allow {
			t.Errorf("deny %s: got %s, want deny=%v", tt.block, describe(d), tt.allow)
		}
	}
}

func TestEvaluate_DenyReasonsSeenFromTheDecision(t *testing.T) {
	t.Parallel()
	p := mustParse(t, `{allow: {or: [{authenticated_user: true}]}, deny: {or: [{email: {is: alice@example.com}}, {groups: {has: banned}}]}}`)
	d := p.Evaluate(alice("", ""))
	want := Decision{
		Deny:          true,
		AllowWhyTrue:  rs(ReasonAuthenticatedUser),
		AllowWhyFalse: rs(ReasonEmailUnauthorized),
		DenyWhyTrue:   rs(ReasonEmailUnauthorized),
	}
	if d != want {
		t.Errorf("got %s, want %s", describe(d), describe(want))
	}
	in := alice("", "")
	in.Email = "carol@example.com"
	d = p.Evaluate(in)
	want = Decision{
		Allow:        true,
		AllowWhyTrue: rs(ReasonAuthenticatedUser, ReasonEmailOK, ReasonGroupsOK),
		DenyWhyFalse: rs(ReasonEmailOK, ReasonGroupsOK),
	}
	if d != want {
		t.Errorf("got %s, want %s", describe(d), describe(want))
	}
}

func TestEvaluate_RuleListOrsAllowsAndAnyDenyDenies(t *testing.T) {
	t.Parallel()
	p := mustParse(t, `
- allow: {or: [{groups: {has: eng}}]}
- allow: {or: [{email: {is: bob@example.com}}]}
  deny: {or: [{mcp_tool: {is: drop_db}}]}
- deny: {or: [{claim/tier: revoked}]}
`)
	tests := []struct {
		name string
		in   *Input
		want Decision
	}{
		{"first rule allows", alice("tools/call", "search"), Decision{
			Allow:        true,
			AllowWhyTrue: rs(ReasonGroupsOK, ReasonMCPToolOK, ReasonClaimOK),
			DenyWhyFalse: rs(ReasonMCPToolOK, ReasonClaimOK),
		}},
		{"second rule allows", &Input{Authenticated: true, Email: "bob@example.com", MCPMethod: "initialize"}, Decision{
			Allow:        true,
			AllowWhyTrue: rs(ReasonEmailOK, ReasonMCPToolNotAToolCall, ReasonClaimOK),
			DenyWhyFalse: rs(ReasonMCPToolNotAToolCall, ReasonClaimOK),
		}},
		{"a deny of another rule denies", alice("tools/call", "drop_db"), Decision{
			Deny:          true,
			AllowWhyTrue:  rs(ReasonGroupsOK),
			AllowWhyFalse: rs(ReasonMCPToolUnauthorized),
			DenyWhyTrue:   rs(ReasonMCPToolUnauthorized),
		}},
		{"no allow matches", &Input{Authenticated: true, Email: "eve@example.com"}, Decision{
			AllowWhyFalse: rs(ReasonGroupsUnauthorized, ReasonEmailUnauthorized),
			DenyWhyFalse:  rs(ReasonMCPToolNotAToolCall, ReasonClaimOK),
		}},
	}
	for _, tt := range tests {
		if got := p.Evaluate(tt.in); got != tt.want {
			t.Errorf("%s: got\n %s\nwant\n %s", tt.name, describe(got), describe(tt.want))
		}
	}
}

func TestEvaluate_FailsClosedWithoutAllow(t *testing.T) {
	t.Parallel()
	for _, src := range []string{``, `[]`, `{}`, `{allow: {}}`, `{deny: {or: [{groups: {has: x}}]}}`, `[{deny: {or: [{accept: true}]}}]`} {
		p := mustParse(t, src)
		if d := p.Evaluate(alice("tools/list", "")); d.Allow {
			t.Errorf("%q allowed: %s", src, describe(d))
		}
	}
	var nilPolicy *Policy
	if nilPolicy.Evaluate(alice("", "")).Allow || (&Policy{}).Evaluate(alice("", "")).Allow {
		t.Error("nil or zero Policy allowed")
	}
	if mustParse(t, `{allow: {and: [{accept: true}]}}`).Evaluate(nil).Allow {
		t.Error("nil Input allowed")
	}
}

func TestParse_ErrorsNameThePath(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src  string
		want string
		kind error
	}{
		{`{deny: {and: [{mcp_tool: {regex: x}}]}}`, `policy.deny.and[0].mcp_tool: unknown operator "regex"`, ErrUnknownOperator},
		{`{allow: {and: [{emial: {is: x}}]}}`, `policy.allow.and[0].emial: unknown criterion "emial"`, ErrUnknownCriterion},
		{`{allow: {and: [{email: {is: x}}]}, permit: {}}`, `policy: unknown key "permit"`, ErrUnknownKey},
		{`{allow: {xor: []}}`, `policy.allow: unknown key "xor"`, ErrUnknownKey},
		{`{allow: {and: []}}`, `policy.allow.and: invalid value empty list`, ErrInvalidValue},
		{`{allow: {and: {email: {is: x}}}}`, `policy.allow.and: wrong type (want a list, got a map)`, ErrWrongType},
		{`{allow: {and: [{email: {is: [x]}}]}}`, `policy.allow.and[0].email.is: wrong type (want a string, got a list)`, ErrWrongType},
		{`{allow: {and: [{email: {in: x}}]}}`, `policy.allow.and[0].email.in: wrong type`, ErrWrongType},
		{`{allow: {and: [{email: {in: [a, 3]}}]}}`, `policy.allow.and[0].email.in[1]: wrong type (want a string, got a number)`, ErrWrongType},
		{`{allow: {and: [{email: {is: ""}}]}}`, `policy.allow.and[0].email.is: invalid value empty string`, ErrInvalidValue},
		{`{allow: {and: [{email: {}}]}}`, `policy.allow.and[0].email: invalid value empty matcher`, ErrInvalidValue},
		{`{allow: {and: [{email: x}]}}`, `policy.allow.and[0].email: wrong type (want a map, got a string)`, ErrWrongType},
		{`{allow: {and: [{groups: {is: x}}]}}`, `policy.allow.and[0].groups: unknown operator "is"`, ErrUnknownOperator},
		{`{allow: {and: [{groups: {has: 1}}]}}`, `policy.allow.and[0].groups.has: wrong type`, ErrWrongType},
		{`{allow: {and: [{accept: false}]}}`, `policy.allow.and[0].accept: invalid value must be true`, ErrInvalidValue},
		{`{allow: {and: [{authenticated_user: "yes"}]}}`, `policy.allow.and[0].authenticated_user: wrong type`, ErrWrongType},
		{`{allow: {and: [{claim/: x}]}}`, `policy.allow.and[0].claim/: invalid value empty claim name`, ErrInvalidValue},
		{`{allow: {and: [{claim/x: []}]}}`, `policy.allow.and[0].claim/x: invalid value empty list`, ErrInvalidValue},
		{`{allow: {and: [{claim/x: {a: b}}]}}`, `policy.allow.and[0].claim/x: wrong type`, ErrWrongType},
		{`{allow: {and: [{claim/x: [a, {b: c}]}]}}`, `policy.allow.and[0].claim/x[1]: wrong type`, ErrWrongType},
		{`{allow: {and: [{email: {is: a}, user: {is: b}}]}}`, `policy.allow.and[0]: invalid value want one criterion or a block of operators, got 2 keys`, ErrInvalidValue},
		{`{allow: {and: [{and: [{accept: true}], email: {is: b}}]}}`, `policy.allow.and[0]: invalid value`, ErrInvalidValue},
		{`{allow: {and: [{}]}}`, `policy.allow.and[0]: invalid value`, ErrInvalidValue},
		{`{allow: {and: ["accept"]}}`, `policy.allow.and[0]: wrong type (want a map, got a string)`, ErrWrongType},
		{`{allow: {and: [{or: [{mcp_tool: {not_in: [a, ""]}}]}]}}`, `policy.allow.and[0].or[0].mcp_tool.not_in[1]: invalid value empty string`, ErrInvalidValue},
		{`[{allow: {and: [{accept: true}]}}, {deny: {or: [{user: {contains: 1}}]}}]`, `policy[1].deny.or[0].user.contains: wrong type`, ErrWrongType},
		{`[3]`, `policy[0]: wrong type (want a map, got a number)`, ErrWrongType},
		{`"allow"`, `policy: wrong type (want a map, got a string)`, ErrWrongType},
		{`{allow: null}`, `policy.allow: wrong type (want a map, got null)`, ErrWrongType},
		{`{allow: {and: [{accept: true}]}, 7: x}`, `policy: wrong type (want a map with string keys`, ErrWrongType},
	}
	for _, tt := range tests {
		var v any
		if err := yaml.Unmarshal([]byte(tt.src), &v); err != nil {
			t.Fatalf("%s: yaml: %v", tt.src, err)
		}
		_, err := Parse(v)
		var pe *ParseError
		if !errors.As(err, &pe) || !errors.Is(err, tt.kind) || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("Parse(%s) = %v, want %q (%v)", tt.src, err, tt.want, tt.kind)
		}
	}
}

func TestParse_NestingTooDeep(t *testing.T) {
	t.Parallel()
	var v any = map[string]any{"accept": true}
	for range maxDepth + 1 {
		v = map[string]any{"and": []any{v}}
	}
	_, err := Parse(map[string]any{"allow": v})
	if !errors.Is(err, ErrInvalidValue) || !strings.Contains(err.Error(), "nesting deeper than") {
		t.Fatalf("err = %v", err)
	}
}

// The filter decodes its policy from JSON: float64 numbers, []any lists, map[string]any.
func TestParse_AcceptsEncodingJSONAndGoValues(t *testing.T) {
	t.Parallel()
	v := map[string]any{
		"allow": map[string]any{"and": []any{
			map[string]any{"claim/level": []any{float64(3), 2.5, true}},
			map[string]any{"mcp_tool": map[string]any{"in": []string{"a"}}},
		}},
	}
	p, err := Parse(v)
	if err != nil {
		t.Fatal(err)
	}
	in := &Input{Authenticated: true, Claims: map[string][]string{"level": {"2.5"}}, MCPMethod: "tools/call", MCPTool: "a"}
	if !p.Evaluate(in).Allow {
		t.Error("not allowed")
	}
}

func TestClaimString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   any
		want string
		ok   bool
	}{
		{"x", "x", true}, {true, "true", true}, {false, "false", true},
		{3, "3", true}, {int64(-4), "-4", true}, {uint64(5), "5", true},
		{float64(42), "42", true}, {1.5, "1.5", true}, {1e21, "1000000000000000000000", true},
		{nil, "", false}, {[]any{}, "", false}, {map[string]any{}, "", false},
	}
	for _, tt := range tests {
		got, ok := ClaimString(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ClaimString(%#v) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestReasons(t *testing.T) {
	t.Parallel()
	s := rs(ReasonMCPToolOK, ReasonAccept, ReasonMCPToolOK, ReasonDomainOK)
	if got := s.Strings(); !slices.Equal(got, []string{"accept", "domain-ok", "mcp-tool-ok"}) {
		t.Errorf("Strings = %q", got)
	}
	if s.Len() != 3 || !s.Has(ReasonDomainOK) || s.Has(ReasonEmailOK) || s.Has(Reason(200)) {
		t.Error("Len/Has wrong")
	}
	if s.Add(Reason(200)) != s || Reason(200).String() != "" {
		t.Error("unknown reason not ignored")
	}
	if got := Reasons(0).Strings(); got == nil || len(got) != 0 {
		t.Errorf("empty Strings = %#v", got)
	}
	for r := range numReasons {
		if r.String() == "" {
			t.Errorf("reason %d has no name", r)
		}
	}
}

// TestReasonNames: every name is lower-case ASCII letters, digits and '-', so that writers of
// JSON and headers may copy it as it is (AppendJoined's promise).
func TestReasonNames(t *testing.T) {
	t.Parallel()
	for r := range numReasons {
		for _, c := range []byte(r.String()) {
			if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
				t.Errorf("reason %d name %q has %q", r, r.String(), c)
			}
		}
	}
}

func TestReasons_AppendJoined(t *testing.T) {
	t.Parallel()
	all := Reasons(0)
	for r := range numReasons {
		all = all.Add(r)
	}
	for _, tt := range []struct {
		name string
		s    Reasons
	}{
		{"empty", 0},
		{"one", rs(ReasonDomainOK)},
		{"several", rs(ReasonMCPToolOK, ReasonAccept, ReasonDomainOK)},
		{"last", rs(numReasons - 1)},
		{"all", all},
		{"unknown bits", all | 1<<31},
	} {
		for _, sep := range []string{",", ", ", `","`} {
			want := "pre:" + strings.Join(tt.s.Strings(), sep)
			if got := string(tt.s.AppendJoined([]byte("pre:"), sep)); got != want {
				t.Errorf("%s, %q: AppendJoined = %q, want %q", tt.name, sep, got, want)
			}
		}
	}
}

func BenchmarkEvaluate_RecommendedPattern(b *testing.B) {
	p := mustParse(b, `
allow:
  and:
    - domain: {is: example.com}
    - authenticated_user: true
deny:
  or:
    - mcp_tool: {not_in: [search, fetch, get_issue, list_issues, create_comment]}
    - groups: {has: suspended}
`)
	in := alice("tools/call", "list_issues")
	b.ReportAllocs()
	for b.Loop() {
		if !p.Evaluate(in).Allow {
			b.Fatal("not allowed")
		}
	}
}
