package upstream

import (
	"net/http"

	"github.com/mcpmesh/gateway/tokensvc/hosts"
	"github.com/mcpmesh/gateway/tokensvc/store"
)

// BeforeCode implements oauth.Upstream (pattern 2): before the authorization server issues a
// code to an MCP client, the user connects every upstream route of the host that the
// request's resource covers ("" or the host's origin: all of them), that their policy
// allows, and that they have no usable Internal Token for. When there is any, it sends the
// browser through those flows and back to returnTo (the authorization request, a path on
// this host) and returns true; it also returns true after answering an error itself.
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
	todo, err := s.needed(r.Context(), sess, rts)
	if err != nil {
		s.internalError(w, r, "read upstream tokens", err)
		return true
	}
	if len(todo) == 0 {
		return false
	}
	s.start(w, r, sess, h, todo, returnTo)
	return true
}
