package server

import (
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/tokensvc/hosts"
	"github.com/mcpmesh/gateway/tokensvc/oauth"
	"github.com/mcpmesh/gateway/tokensvc/obs"
	"github.com/mcpmesh/gateway/tokensvc/reqid"
)

// This file is the token service's routing table: which endpoints each kind of host serves,
// with which methods. Handlers check neither the method nor the host; a path a host does not
// serve gets notFound, a method an endpoint does not take gets methodNotAllowed.
//
// The public listener:
//   - any Host: the health and readiness probes;
//   - a Host that is not configured: 421 (hosts.Middleware), no handler runs;
//   - every configured host: the JWKS;
//   - the authenticate host: sign-in at the identity provider and its callback;
//   - every route host: sign-in, the hand-over from the authenticate host, sign-out;
//   - route hosts with mcp.server routes: the protected resource and authorization server
//     metadata, the authorization server's endpoints, and upstream OAuth (paths.Connect,
//     paths.UpstreamCallback, paths.UpstreamClientMetadata, paths.Disconnect);
//   - route hosts with mcp.client routes: the route listing.
//
// The internal listener: the check API (filter key first), the health and readiness probes
// and the Prometheus metrics.

// Request body limits.
const (
	maxPublicBody = 64 << 10
	maxCheckBody  = 16 << 10
)

// publicRoutes is the public listener's handler.
func (s *Server) publicRoutes() http.Handler {
	r := newRouter()
	r.Use(obs.HTTP("public", s.metrics, s.tracer), reqid.Middleware, s.logRequests("public"), s.recoverer, securityHeaders, maxBody(maxPublicBody), withDeadline(publicDeadline))
	// Kubelet probes use the pod IP: the probe answers on any Host.
	r.Get(paths.Health, health)
	r.Head(paths.Health, health)
	r.Get(paths.Ready, s.ready)
	r.Head(paths.Ready, s.ready)
	// Every other path is for a configured host (421 for any other), served by that host's
	// router. (Not a Mount on "/": chi would send the probe's other methods there too.)
	r.NotFound(s.hosts.Middleware(s.hostRouters()).ServeHTTP)
	return r
}

// hostRouters builds the router of every configured host.
func (s *Server) hostRouters() http.Handler {
	byHost := map[*hosts.Host]http.Handler{}
	for _, h := range s.hosts.All() {
		byHost[h] = s.hostRoutes(h)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		byHost[hosts.MustFromContext(r.Context())].ServeHTTP(w, r)
	})
}

// hostRoutes is the router of host h: the endpoints of each kind h is.
func (s *Server) hostRoutes(h *hosts.Host) http.Handler {
	r := newRouter()
	r.Get(paths.JWKS, s.signer.ServeHTTP)
	r.Head(paths.JWKS, s.signer.ServeHTTP)
	if h.Authenticate {
		s.authenticateHostRoutes(r)
	}
	if len(h.Routes) > 0 {
		s.routeHostRoutes(r)
	}
	if len(h.ServerRoutes()) > 0 && !h.Authenticate {
		s.mcpServerHostRoutes(r)
	}
	if len(h.ClientRoutes()) > 0 {
		s.mcpClientHostRoutes(r)
	}
	return r
}

// authenticateHostRoutes: the authenticate host (authenticate_service_url).
func (s *Server) authenticateHostRoutes(r chi.Router) {
	r.Get(paths.AuthenticateSignIn, s.sessions.AuthenticateSignIn)
	r.Head(paths.AuthenticateSignIn, s.sessions.AuthenticateSignIn)
	r.Get(paths.IDPCallback, s.sessions.Callback)
	r.Post(paths.IDPCallback, s.sessions.Callback) // response_mode=form_post
}

// routeHostRoutes: every route host, whatever its routes (MCP server, MCP client, plain).
func (s *Server) routeHostRoutes(r chi.Router) {
	r.Get(paths.SignIn, s.sessions.SignIn)
	r.Head(paths.SignIn, s.sessions.SignIn)
	r.Get(paths.Handoff, s.sessions.Handoff)
	r.Head(paths.Handoff, s.sessions.Handoff)
	r.Get(paths.SignOut, s.sessions.SignOutPage)
	r.Head(paths.SignOut, s.sessions.SignOutPage)
	r.Post(paths.SignOut, s.sessions.SignOut)
}

// mcpServerHostRoutes: route hosts with mcp.server routes (each such host is an issuer).
func (s *Server) mcpServerHostRoutes(r chi.Router) {
	as := s.oauth
	// Credential-free endpoints: readable cross-origin, OPTIONS is the CORS preflight.
	r.Group(func(r chi.Router) {
		r.Use(oauth.CORS)
		r.Get(paths.AuthorizationServerMetadata, as.ASMetadata)
		r.Head(paths.AuthorizationServerMetadata, as.ASMetadata)
		r.Options(paths.AuthorizationServerMetadata, oauth.Preflight)
		r.Handle(paths.AuthorizationServerMetadata+"/*", http.HandlerFunc(notFound)) // one issuer per host
		r.Options(paths.AuthorizationServerMetadata+"/*", oauth.Preflight)
		r.Get(paths.OpenIDConfiguration, as.ASMetadata) // OpenID Connect discovery, same document
		r.Head(paths.OpenIDConfiguration, as.ASMetadata)
		r.Options(paths.OpenIDConfiguration, oauth.Preflight)
		r.Handle(paths.OpenIDConfiguration+"/*", http.HandlerFunc(notFound)) // no path insertion: the issuer has no path
		r.Options(paths.OpenIDConfiguration+"/*", oauth.Preflight)
		r.Get(paths.ProtectedResourceMetadata, as.PRMetadata)
		r.Head(paths.ProtectedResourceMetadata, as.PRMetadata)
		r.Options(paths.ProtectedResourceMetadata, oauth.Preflight)
		r.Get(paths.ProtectedResourceMetadata+"/*", as.PRMetadata)
		r.Head(paths.ProtectedResourceMetadata+"/*", as.PRMetadata)
		r.Options(paths.ProtectedResourceMetadata+"/*", oauth.Preflight)
		r.Post(paths.Register, as.Register)
		r.Options(paths.Register, oauth.Preflight)
		r.Post(paths.Token, as.Token)
		r.Options(paths.Token, oauth.Preflight)
		r.Post(paths.Revoke, as.Revoke)
		r.Options(paths.Revoke, oauth.Preflight)
	})
	// Browser endpoints: same-origin only.
	r.Get(paths.Authorize, as.Authorize)
	r.Post(paths.Authorize, as.Authorize)
	r.Post(paths.Consent, as.Consent)
	// Upstream OAuth (package upstream): connect, its callback, disconnect.
	up := s.upstream
	r.Get(paths.Connect, up.Connect)
	r.Get(paths.UpstreamCallback, up.Callback)
	r.Get(paths.UpstreamClientMetadata, up.ClientMetadata)
	r.Get(paths.Disconnect, up.DisconnectPage)
	r.Post(paths.Disconnect, up.Disconnect)
}

// mcpClientHostRoutes: route hosts with mcp.client routes.
func (s *Server) mcpClientHostRoutes(r chi.Router) {
	r.Get(paths.Routes, s.handleRoutes)
	r.Head(paths.Routes, s.handleRoutes)
}

// internalRoutes is the internal listener's handler.
func (s *Server) internalRoutes() http.Handler {
	r := newRouter()
	r.Use(obs.HTTP("internal", s.metrics, s.tracer), reqid.Middleware, s.logRequests("internal"), s.recoverer, securityHeaders, maxBody(maxCheckBody), withDeadline(s.checkDeadline()))
	r.Get(paths.Health, health)
	r.Head(paths.Health, health)
	r.Get(paths.Ready, s.ready)
	r.Head(paths.Ready, s.ready)
	r.Get(paths.Metrics, s.metrics.Handler().ServeHTTP)
	// The check API: nothing happens before the filter key is verified, not even routing.
	r.Route(paths.Check, func(r chi.Router) {
		r.Use(s.requireFilterKey)
		r.Post("/", s.handleCheck)
	})
	r.Handle(paths.Check+"/", http.HandlerFunc(notFound)) // the path is exact
	return r
}

// newRouter returns a router answering unknown paths and methods with the service's one
// NotFound/MethodNotAllowed pair.
func newRouter() chi.Router {
	r := chi.NewRouter()
	r.NotFound(notFound)
	r.MethodNotAllowed(func(w http.ResponseWriter, req *http.Request) { methodNotAllowed(w, req, r) })
	return r
}

// notFound answers a path the host does not serve.
func notFound(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusNotFound, errorBody{Error: "not_found", Description: "no such endpoint on this host"})
}

// methodNotAllowed answers a method the endpoint does not take, with Allow listing those
// routes routes for its path.
func methodNotAllowed(w http.ResponseWriter, r *http.Request, routes chi.Routes) {
	if allow := allowedMethods(routes, r.URL.Path); allow != "" {
		w.Header().Set("Allow", allow)
	}
	writeJSON(w, http.StatusMethodNotAllowed, errorBody{Error: "invalid_request", Description: "method " + r.Method + " is not allowed here"})
}

// allowedMethods lists the methods routes routes for path.
func allowedMethods(routes chi.Routes, path string) string {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions} {
		if routes.Match(chi.NewRouteContext(), m, path) {
			allow = append(allow, m)
		}
	}
	return strings.Join(allow, ", ")
}

func health(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("ok\n"))
}
