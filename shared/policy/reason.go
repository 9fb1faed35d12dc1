package policy

import (
	"iter"
	"math/bits"
)

// Reason names why a criterion pushed a decision one way or the other. Its String form is
// what the authorization log shows in allow-why-true, allow-why-false and deny-why-false.
type Reason uint8

// The reasons, in the order in which a [Reasons] set lists them.
const (
	ReasonAccept               Reason = iota // "accept"
	ReasonAuthenticatedUser                  // "authenticated-user"
	ReasonUserUnauthenticated                // "user-unauthenticated"
	ReasonDomainOK                           // "domain-ok"
	ReasonDomainUnauthorized                 // "domain-unauthorized"
	ReasonEmailOK                            // "email-ok"
	ReasonEmailUnauthorized                  // "email-unauthorized"
	ReasonUserOK                             // "user-ok"
	ReasonUserUnauthorized                   // "user-unauthorized"
	ReasonGroupsOK                           // "groups-ok"
	ReasonGroupsUnauthorized                 // "groups-unauthorized"
	ReasonClaimOK                            // "claim-ok"
	ReasonClaimUnauthorized                  // "claim-unauthorized"
	ReasonClientIDOK                         // "client-id-ok"
	ReasonClientIDUnauthorized               // "client-id-unauthorized"
	ReasonMCPToolOK                          // "mcp-tool-ok"
	ReasonMCPToolUnauthorized                // "mcp-tool-unauthorized"
	ReasonMCPToolNotAToolCall                // "mcp-tool-not-a-tool-call"

	// Refusals the filter makes before the policy can decide; they appear in allow-why-false
	// of the record it writes for the refused request.
	ReasonMCPContentTypeUnsupported     // "mcp-content-type-unsupported": not application/json, an encoded body, or one the upstream could decode otherwise (415)
	ReasonMCPSessionUnknown             // "mcp-session-unknown": a session ID not issued to this user on this route
	ReasonTokenMissing                  // "token-missing": no credential, or a malformed one (401)
	ReasonTokenInvalid                  // "token-invalid": the token service refused the credential (401)
	ReasonBodyTooLarge                  // "body-too-large": a body over max_request_bytes (413)
	ReasonBodyUnparsable                // "body-unparsable": a body the filter will not read as the upstream would (400)
	ReasonRequestAmbiguous              // "request-ambiguous": an ambiguous path, a session header or parameter given twice (400)
	ReasonRouteNotFound                 // "route-not-found": no route for the path on a route host (404)
	ReasonTokenServiceUnavailable       // "token-service-unavailable": the token service could not decide (503)
	ReasonUpstreamAuthorizationRequired // "upstream-authorization-required": the user has no usable Internal Token for the upstream (401 invalid_token)
	ReasonMCPHeaderMismatch             // "mcp-header-mismatch": MCP-Protocol-Version, Mcp-Method or Mcp-Name missing, malformed, repeated or not matching the body (400, JSON-RPC -32020)
	ReasonMCPToolDefinitionChanged      // "mcp-tool-definition-changed": a tool of a pinned route that is not in its lock file, or whose definition the server changed (docs/tool-pinning.md)

	numReasons
)

var reasonNames = [numReasons]string{
	ReasonAccept:               "accept",
	ReasonAuthenticatedUser:    "authenticated-user",
	ReasonUserUnauthenticated:  "user-unauthenticated",
	ReasonDomainOK:             "domain-ok",
	ReasonDomainUnauthorized:   "domain-unauthorized",
	ReasonEmailOK:              "email-ok",
	ReasonEmailUnauthorized:    "email-unauthorized",
	ReasonUserOK:               "user-ok",
	ReasonUserUnauthorized:     "user-unauthorized",
	ReasonGroupsOK:             "groups-ok",
	ReasonGroupsUnauthorized:   "groups-unauthorized",
	ReasonClaimOK:              "claim-ok",
	ReasonClaimUnauthorized:    "claim-unauthorized",
	ReasonClientIDOK:           "client-id-ok",
	ReasonClientIDUnauthorized: "client-id-unauthorized",
	ReasonMCPToolOK:            "mcp-tool-ok",
	ReasonMCPToolUnauthorized:  "mcp-tool-unauthorized",
	ReasonMCPToolNotAToolCall:  "mcp-tool-not-a-tool-call",

	ReasonMCPContentTypeUnsupported:     "mcp-content-type-unsupported",
	ReasonMCPSessionUnknown:             "mcp-session-unknown",
	ReasonTokenMissing:                  "token-missing",
	ReasonTokenInvalid:                  "token-invalid",
	ReasonBodyTooLarge:                  "body-too-large",
	ReasonBodyUnparsable:                "body-unparsable",
	ReasonRequestAmbiguous:              "request-ambiguous",
	ReasonRouteNotFound:                 "route-not-found",
	ReasonTokenServiceUnavailable:       "token-service-unavailable",
	ReasonUpstreamAuthorizationRequired: "upstream-authorization-required",
	ReasonMCPHeaderMismatch:             "mcp-header-mismatch",
	ReasonMCPToolDefinitionChanged:      "mcp-tool-definition-changed",
}

// String returns the reason as the authorization log writes it, or "" for an unknown value.
func (r Reason) String() string {
	if r >= numReasons {
		return ""
	}
	return reasonNames[r]
}

// Reasons is a set of reasons. It is a value: copying it is cheap and allocation-free. Its
// iteration order is the order of the Reason constants, so it is stable and free of
// duplicates.
type Reasons uint32

// Add returns the set with r added. Unknown reasons are ignored.
func (s Reasons) Add(r Reason) Reasons {
	if r >= numReasons {
		return s
	}
	return s | 1<<r
}

// Has reports whether r is in the set.
func (s Reasons) Has(r Reason) bool { return r < numReasons && s&(1<<r) != 0 }

// Len returns the number of reasons in the set.
func (s Reasons) Len() int {
	n := 0
	for x := s; x != 0; x &= x - 1 {
		n++
	}
	return n
}

// All yields the reasons of the set in order.
func (s Reasons) All() iter.Seq[Reason] {
	return func(yield func(Reason) bool) {
		for r := Reason(0); r < numReasons; r++ {
			if s.Has(r) && !yield(r) {
				return
			}
		}
	}
}

// AppendStrings appends the names of the set's reasons, in order, to dst and returns the
// extended slice.
func (s Reasons) AppendStrings(dst []string) []string {
	for r := Reason(0); r < numReasons; r++ {
		if s.Has(r) {
			dst = append(dst, reasonNames[r])
		}
	}
	return dst
}

// AppendJoined appends the names of the set's reasons, in order and separated by sep, to dst
// and returns the extended slice. It visits only the reasons in the set (the filter publishes
// a set on every request). Names are lower-case ASCII letters, digits and '-' (TestReasonNames),
// so they need no quoting in JSON or in a header.
func (s Reasons) AppendJoined(dst []byte, sep string) []byte {
	first := true
	for x := s & (1<<numReasons - 1); x != 0; x &= x - 1 {
		if !first {
			dst = append(dst, sep...)
		}
		first = false
		dst = append(dst, reasonNames[bits.TrailingZeros32(uint32(x))]...)
	}
	return dst
}

// Strings returns the names of the set's reasons, in order. It returns an empty, non-nil
// slice for an empty set, so it encodes as a JSON list.
func (s Reasons) Strings() []string {
	return s.AppendStrings(make([]string, 0, s.Len()))
}
