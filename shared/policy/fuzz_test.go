package policy

import (
	"encoding/json"
	"strings"
	"testing"
)

// Seeds live in testdata/fuzz/FuzzParse and testdata/fuzz/FuzzEvaluate.

func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		if json.Unmarshal(data, &v) != nil {
			return
		}
		p, err := Parse(v)
		if err != nil {
			if _, ok := err.(*ParseError); !ok {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		for _, in := range []*Input{{}, alice("tools/call", "search"), alice("tools/list", "")} {
			checkDecision(t, p, in)
		}
	})
}

func FuzzEvaluate(f *testing.F) {
	f.Fuzz(func(t *testing.T, policy []byte, authenticated bool, user, email, groups, method, tool string) {
		var v any
		if json.Unmarshal(policy, &v) != nil {
			return
		}
		p, err := Parse(v)
		if err != nil {
			return
		}
		in := &Input{
			Authenticated: authenticated, User: user, Email: email,
			Groups: strings.Split(groups, ","), Claims: map[string][]string{"c": strings.Split(groups, ",")},
			MCPMethod: method, MCPTool: tool,
		}
		checkDecision(t, p, in)
	})
}

// checkDecision evaluates p for in and checks the properties every decision has.
func checkDecision(t *testing.T, p *Policy, in *Input) {
	t.Helper()
	d := p.Evaluate(in)
	if again := p.Evaluate(in); again != d {
		t.Fatalf("not deterministic: %s then %s", describe(d), describe(again))
	}
	if d.Allow && (d.Deny || d.AllowWhyFalse != 0 || d.DenyWhyTrue != 0) {
		t.Fatalf("allowed with refusal reasons: %s", describe(d))
	}
	if d.Deny && (d.Allow || d.DenyWhyFalse != 0 || d.DenyWhyTrue == 0 && hasDenyCriteria(p)) {
		t.Fatalf("inconsistent deny: %s", describe(d))
	}
	all := d.AllowWhyTrue | d.AllowWhyFalse | d.DenyWhyTrue | d.DenyWhyFalse
	toolReasons := rs(ReasonMCPToolOK, ReasonMCPToolUnauthorized)
	identityReasons := rs(ReasonEmailOK, ReasonEmailUnauthorized, ReasonDomainOK, ReasonDomainUnauthorized,
		ReasonUserOK, ReasonUserUnauthorized, ReasonGroupsOK, ReasonGroupsUnauthorized, ReasonClaimOK, ReasonClaimUnauthorized)
	if in.MCPMethod == MethodToolsCall {
		if all.Has(ReasonMCPToolNotAToolCall) {
			t.Fatalf("tools/call reported not-a-tool-call: %s", describe(d))
		}
	} else {
		if all&toolReasons != 0 {
			t.Fatalf("%q reported a tool reason: %s", in.MCPMethod, describe(d))
		}
		// The tool of a non-tools/call message must not matter.
		other := *in
		other.MCPTool = in.MCPTool + "x"
		if d2 := p.Evaluate(&other); d2 != d {
			t.Fatalf("tool changed the decision of %q: %s vs %s", in.MCPMethod, describe(d), describe(d2))
		}
	}
	if !in.Authenticated && all&identityReasons != 0 {
		t.Fatalf("identity reasons without identity: %s", describe(d))
	}
}

func hasDenyCriteria(p *Policy) bool {
	for _, r := range p.rules {
		if r.deny != nil {
			return true
		}
	}
	return false
}
