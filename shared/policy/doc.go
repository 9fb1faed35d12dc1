// Package policy owns the route policy language of the gateway and its evaluation.
//
// A policy is parsed once, at configuration time, from a generic decoded value (what
// gopkg.in/yaml.v3 or encoding/json produce: map[string]any, []any, string, bool, numbers),
// so the token service (YAML) and the filter (JSON plugin configuration) share one parser.
// Evaluation is allocation-free and safe to run per request inside the proxy-wasm filter.
//
// # Language
//
// The value of a route's `policy` key is one rule or a list of rules:
//
//	policy:
//	  allow:
//	    and:
//	      - domain: {is: example.com}
//	  deny:
//	    or:
//	      - mcp_tool: {not_in: [search, fetch]}
//
// A rule has the keys `allow` and `deny`, each holding a block. A block has one or more of
// the keys `and`, `or`, `not`, `nor`, each holding a non-empty list; when a block has several
// keys all of them must hold. In a list, each element is either a criterion (a map with
// exactly one key) or a nested block (a map whose keys are all operators).
//
//	and: every element holds         (A and B)
//	or:  at least one element holds  (A or B)
//	not: no element holds            (not A) and (not B)
//	nor: some element does not hold  (not A) or (not B)
//
// `not` and `nor` are defined as in Pomerium's policy language, so that policies carry
// over unchanged; with a single element both simply negate it.
//
// Criteria:
//
//	accept: true                    always holds
//	authenticated_user: true        the request carries a valid identity
//	email: MATCHER                  the user's email (ASCII case-insensitive)
//	domain: MATCHER                 the part of the email after the last "@" (ASCII case-insensitive)
//	user: MATCHER                   the user's subject identifier (exact)
//	groups: {has: NAME}             NAME is one of the user's groups (exact)
//	claim/NAME: VALUE or [VALUE...] one of the values of claim NAME equals one of the VALUEs
//	mcp_tool: MATCHER               the tool named by a tools/call request (exact)
//	client_id: MATCHER              the OAuth client the token was issued to (exact): a
//	                                pre-registered client's client_id (mcp_clients; a service
//	                                identity's too), a registered client's ID or a metadata
//	                                document URL; "" for a browser session
//
// A MATCHER is a map of one or more operators, all of which must hold: `is`, `starts_with`,
// `ends_with`, `contains` (a non-empty string) and `in`, `not_in` (a list of non-empty
// strings). Claim values that are booleans or numbers in the configuration are compared in
// their canonical text form ("true", "42", "1.5"); the caller must put claims into
// [Input.Claims] the same way.
//
// The identity criteria (email, domain, user, groups, claim/…, client_id) are false for a request
// without identity, whatever their operator. `mcp_tool` is false for every request whose
// MCP method is not tools/call, whatever its operator, `not_in` included.
//
// # Decision
//
// A request is allowed when the allow block of at least one rule holds and the deny block of
// no rule holds. A policy with no rule, or whose rules have no (or an empty) allow block,
// allows nothing: the gateway fails closed.
//
// The recommended pattern keeps identity checks under `allow` and tool checks under `deny`:
// an allowlist of tools is a deny with `mcp_tool: {not_in: [...]}`. Non-tool requests
// (initialize, tools/list, resources/list, …) then pass, because `mcp_tool` is false for
// them and the deny block does not fire. Putting `mcp_tool` only under `allow` makes every
// non-tool request fail the allow condition.
//
// # Reasons
//
// Each criterion reports a [Reason] seen from the final decision: a criterion whose value
// pushes towards allowing reports its "-ok" reason (or "accept", "authenticated-user"), one
// that pushes towards refusing reports its "-unauthorized" reason (or
// "user-unauthenticated"). Inside `not` and `nor`, and in deny blocks, the push is inverted.
// Two reasons are reported whatever the context: "mcp-tool-not-a-tool-call" by `mcp_tool`
// for a request that is not tools/call, and "user-unauthenticated" by an identity criterion
// for a request without identity. Only the criteria that decided a block's value report:
// for a failed `and`, the elements that failed; for a successful `or`, the elements that held.
package policy
