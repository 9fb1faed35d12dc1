package oauth

import (
	"net/http"

	"github.com/mcpmesh/gateway/tokensvc/hosts"
)

// The endpoints of the authorization server. Each serves one path of a route host with
// mcp.server routes; the caller routes methods and hosts to them (tokensvc/server builds the
// routes: which method reaches which handler, on which hosts, with CORS or not) and must have
// resolved the host with hosts.Middleware. None of them checks the method or the host.

// ASMetadata serves RFC 8414 authorization server metadata (paths.AuthorizationServerMetadata).
func (s *Server) ASMetadata(w http.ResponseWriter, r *http.Request) {
	s.handleASMetadata(w, r, hosts.MustFromContext(r.Context()))
}

// PRMetadata serves RFC 9728 protected resource metadata (paths.ProtectedResourceMetadata and
// the paths under it).
func (s *Server) PRMetadata(w http.ResponseWriter, r *http.Request) {
	s.handlePRMetadata(w, r, hosts.MustFromContext(r.Context()))
}

// Register serves RFC 7591 dynamic client registration (paths.Register).
func (s *Server) Register(w http.ResponseWriter, r *http.Request) {
	s.handleRegister(w, r, hosts.MustFromContext(r.Context()))
}

// Token serves the token endpoint (paths.Token).
func (s *Server) Token(w http.ResponseWriter, r *http.Request) {
	s.handleToken(w, r, hosts.MustFromContext(r.Context()))
}

// Revoke serves RFC 7009 revocation (paths.Revoke).
func (s *Server) Revoke(w http.ResponseWriter, r *http.Request) {
	s.handleRevoke(w, r, hosts.MustFromContext(r.Context()))
}

// Authorize serves the authorization endpoint (paths.Authorize; GET, or POST with the
// parameters in a form).
func (s *Server) Authorize(w http.ResponseWriter, r *http.Request) {
	s.handleAuthorize(w, r, hosts.MustFromContext(r.Context()))
}

// Consent receives the consent form (paths.Consent).
func (s *Server) Consent(w http.ResponseWriter, r *http.Request) {
	s.handleConsent(w, r, hosts.MustFromContext(r.Context()))
}

// CORS lets browser-based MCP clients read the answers of the credential-free endpoints
// (metadata, registration, token, revocation): any origin, WWW-Authenticate exposed. The
// browser endpoints (authorization, consent) must not have it.
func CORS(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", "*")
		h.Set("Access-Control-Expose-Headers", "WWW-Authenticate")
		next.ServeHTTP(w, r)
	})
}

// Preflight answers the CORS preflight (OPTIONS) of a credential-free endpoint.
func Preflight(w http.ResponseWriter, _ *http.Request) {
	h := w.Header()
	h.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
	h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, mcp-protocol-version")
	h.Set("Access-Control-Max-Age", "86400")
	w.WriteHeader(http.StatusNoContent)
}
