package upstream

import (
	"net/http"
	"slices"
	"strings"

	"github.com/mcpmesh/gateway/shared/checkapi"
	"github.com/mcpmesh/gateway/tokensvc/hosts"
	"github.com/mcpmesh/gateway/tokensvc/store"
)

// BeforeCode implements oauth.Upstream (pattern 2): before the authorization server issues a
// code to an MCP client, the user connects every upstream route of the host that the
// request's resource covers ("" or the host's origin: all of them), that their policy
// allows, and that they have no usable Internal Token for. When there is any, it sends the
// browser through those flows and back to returnTo (the authorization request, a path on
// this host) and returns true; it also returns true after answering an error itself.
//
// Step-up: scopes of the authorization request other than the gateway's own (mcp,
// offline_access) are scopes an upstream asked for in an insufficient_scope challenge, which
// the filter passed on to the MCP client. A route whose Internal Token was not granted all of
// them connects again, asking for them too. They are one upstream's: only the route the
// request's resource names exactly takes them (the filter's challenge names that route's own
// metadata); a request for the whole host asks no provider for them.
func (s *Service) BeforeCode(w http.ResponseWriter, r *http.Request, sess *store.Session, resource, returnTo string) bool {
	h := hosts.MustFromContext(r.Context())
	var rts []*Route
	for _, rt := range s.byHost[h.Authority] {
		if resource == "" || resource == h.Origin || resource == rt.ID {
			rts = append(rts, rt)
		}
	}
	if len(rts) == 0 {
		return false
	}
	extra := stepUpScopes(r.FormValue("scope"))
	if extra != nil {
		named := slices.IndexFunc(rts, func(rt *Route) bool { return rt.ID == resource })
		if named < 0 {
			extra = nil
		} else {
			rts = rts[named : named+1]
		}
	}
	todo, err := s.neededWith(r.Context(), sess, rts, extra)
	if err != nil {
		s.internalError(w, r, "read upstream tokens", err)
		return true
	}
	if len(todo) == 0 {
		return false
	}
	s.startWith(w, r, sess, h, todo, returnTo, extra)
	return true
}

// maxStepUpScopes bounds the scopes a step-up adds.
const maxStepUpScopes = 16

// stepUpScopes returns the scope tokens of an authorization request's scope that are not the
// gateway's own: what an upstream asked for (nil when there are none or they are malformed).
func stepUpScopes(scope string) []string {
	var out []string
	for _, sc := range strings.Fields(scope) {
		if sc == checkapi.Scope || sc == "offline_access" || slices.Contains(out, sc) {
			continue
		}
		out = append(out, sc)
	}
	if len(out) > maxStepUpScopes || !scopeTokens(out) {
		return nil
	}
	return out
}
