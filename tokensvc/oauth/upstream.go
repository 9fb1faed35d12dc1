package oauth

import (
	"net/http"

	"github.com/mcpmesh/gateway/tokensvc/store"
)

// Upstream chains upstream OAuth into the authorization flow (pattern 2); package upstream
// implements it.
type Upstream interface {
	// BeforeCode is called once the user is signed in, before a consent page or a code: when
	// the user must first connect upstream accounts for resource ("" or the host's origin:
	// every MCP server route of r's host), it sends the browser through those flows and back
	// to returnTo (a path and query on r's host) and returns true. It also returns true when
	// it has answered an error itself.
	BeforeCode(w http.ResponseWriter, r *http.Request, sess *store.Session, resource, returnTo string) bool
}

// WithUpstream makes the authorization flow run the upstream connect flow before it issues a
// code, when the user has no usable Internal Token (skipped for prompt=none).
func WithUpstream(u Upstream) Option { return func(s *Server) { s.upstream = u } }
