package policy

// MethodToolsCall is the MCP method whose tool name the mcp_tool criterion matches.
const MethodToolsCall = "tools/call"

// Input is what a policy is evaluated against: the identity behind a request and the MCP
// message it carries. The caller owns it; Evaluate only reads it.
type Input struct {
	// Authenticated is true when the request carries a valid identity. The identity
	// criteria are false without it.
	Authenticated bool
	// User is the subject identifier of the user.
	User string
	// Email is the user's email address.
	Email string
	// Name is the user's display name. No criterion matches it; it is carried for logs.
	Name string
	// Groups are the user's group names or identifiers.
	Groups []string
	// Claims are the identity's claims, each with its values in text form (see the
	// package documentation for booleans and numbers).
	Claims map[string][]string
	// ClientID is the OAuth client ID the identity's token was issued to (a pre-registered
	// client's, a dynamically registered one's, or a client ID metadata document URL); ""
	// for a browser session. The criterion client_id matches it.
	ClientID string
	// MCPMethod is the JSON-RPC method of the MCP message ("" when there is none).
	MCPMethod string
	// MCPTool is the tool name of a tools/call message. It is ignored for other methods.
	MCPTool string
}

// Decision is the outcome of evaluating a policy, with the reasons behind it.
type Decision struct {
	// Allow is the final decision: some allow block held and no deny block did.
	Allow bool
	// Deny is true when a deny block held.
	Deny bool
	// AllowWhyTrue holds the reasons of the allow blocks that held, when one did, and,
	// when the request is allowed, the reasons why no deny block held.
	AllowWhyTrue Reasons
	// AllowWhyFalse holds the reasons why no allow block held, when none did, and the
	// reasons of the deny blocks that held.
	AllowWhyFalse Reasons
	// DenyWhyTrue holds the reasons of the deny blocks that held.
	DenyWhyTrue Reasons
	// DenyWhyFalse holds the reasons why no deny block held, when none did.
	DenyWhyFalse Reasons
}

// Policy is a parsed route policy. It is immutable and safe for concurrent use. The zero
// value, like a nil *Policy, allows nothing.
type Policy struct {
	rules []rule
}

type rule struct {
	allow *node // nil: the rule allows nothing
	deny  *node // nil: the rule denies nothing
}

// Evaluate decides whether the request described by in is allowed. It does not allocate.
func (p *Policy) Evaluate(in *Input) Decision {
	var (
		allowMatched, denyMatched bool
		allowTrue, allowFalse     Reasons
		denyTrue, denyFalse       Reasons
	)
	if p != nil && in != nil {
		for i := range p.rules {
			r := &p.rules[i]
			if r.allow != nil {
				if v, rs := r.allow.eval(in, true); v {
					allowMatched = true
					allowTrue |= rs
				} else {
					allowFalse |= rs
				}
			}
			if r.deny != nil {
				if v, rs := r.deny.eval(in, false); v {
					denyMatched = true
					denyTrue |= rs
				} else {
					denyFalse |= rs
				}
			}
		}
	}
	d := Decision{Allow: allowMatched && !denyMatched, Deny: denyMatched}
	if allowMatched {
		d.AllowWhyTrue = allowTrue
	} else {
		d.AllowWhyFalse = allowFalse
	}
	if denyMatched {
		d.DenyWhyTrue = denyTrue
		d.AllowWhyFalse |= denyTrue
	} else {
		d.DenyWhyFalse = denyFalse
		if d.Allow {
			d.AllowWhyTrue |= denyFalse
		}
	}
	return d
}
