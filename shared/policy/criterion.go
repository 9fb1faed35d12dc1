package policy

// critKind is the kind of a criterion.
type critKind uint8

const (
	critAccept critKind = iota
	critAuthenticatedUser
	critEmail
	critDomain
	critUser
	critGroups
	critClaim
	critMCPTool
	critClientID
)

// criterion is one parsed criterion.
type criterion struct {
	kind   critKind
	match  matcher  // email, domain, user, mcp_tool, client_id
	name   string   // groups: the group; claim: the claim name
	values []string // claim: the accepted values
}

// okReason and badReason are the reasons a criterion of each kind reports when its value
// pushes towards allowing, respectively refusing.
var okReason = [...]Reason{
	critAccept:            ReasonAccept,
	critAuthenticatedUser: ReasonAuthenticatedUser,
	critEmail:             ReasonEmailOK,
	critDomain:            ReasonDomainOK,
	critUser:              ReasonUserOK,
	critGroups:            ReasonGroupsOK,
	critClaim:             ReasonClaimOK,
	critMCPTool:           ReasonMCPToolOK,
	critClientID:          ReasonClientIDOK,
}

var badReason = [...]Reason{
	critAccept:            ReasonAccept,
	critAuthenticatedUser: ReasonUserUnauthenticated,
	critEmail:             ReasonEmailUnauthorized,
	critDomain:            ReasonDomainUnauthorized,
	critUser:              ReasonUserUnauthorized,
	critGroups:            ReasonGroupsUnauthorized,
	critClaim:             ReasonClaimUnauthorized,
	critMCPTool:           ReasonMCPToolUnauthorized,
	critClientID:          ReasonClientIDUnauthorized,
}

// eval returns the criterion's value and the reason it reports; pos is true when a true
// value pushes towards allowing.
func (c *criterion) eval(in *Input, pos bool) (bool, Reason) {
	var v bool
	switch c.kind {
	case critAccept:
		v = true
	case critAuthenticatedUser:
		v = in.Authenticated
	case critMCPTool:
		if in.MCPMethod != MethodToolsCall {
			return false, ReasonMCPToolNotAToolCall
		}
		v = c.match.match(in.MCPTool)
	default:
		if !in.Authenticated {
			return false, ReasonUserUnauthenticated
		}
		switch c.kind {
		case critEmail:
			v = c.match.match(in.Email)
		case critDomain:
			v = c.match.match(emailDomain(in.Email))
		case critUser:
			v = c.match.match(in.User)
		case critGroups:
			v = contains(in.Groups, c.name)
		case critClaim:
			v = anyContains(in.Claims[c.name], c.values)
		case critClientID:
			v = c.match.match(in.ClientID)
		}
	}
	if v == pos {
		return v, okReason[c.kind]
	}
	return v, badReason[c.kind]
}

// emailDomain returns the part of email after its last "@", or "" when there is none.
func emailDomain(email string) string {
	for i := len(email) - 1; i >= 0; i-- {
		if email[i] == '@' {
			return email[i+1:]
		}
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func anyContains(have, want []string) bool {
	for _, h := range have {
		if contains(want, h) {
			return true
		}
	}
	return false
}
