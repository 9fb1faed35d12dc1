package server

import (
	"encoding/json"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/tokensvc/reqid"
)

// Request body limits.
const (
	maxPublicBody = 64 << 10
	maxCheckBody  = 16 << 10
)

// buildPublic assembles the public handler: request ID, logging, panic recovery, security
// headers, body limit, then the health probe or the host table (421 for unknown hosts) in
// front of the gateway paths.
func (s *Server) buildPublic() http.Handler {
	r := chi.NewRouter()
	r.NotFound(jsonNotFound)
	r.MethodNotAllowed(jsonMethodNotAllowed)
	r.Handle(paths.JWKS, s.signer)
	// Route hosts (each handler answers 404 on hosts it does not serve).
	r.HandleFunc(paths.SignIn, s.sessions.SignIn)
	r.HandleFunc(paths.Handoff, s.sessions.Handoff)
	r.HandleFunc(paths.SignOut, s.sessions.SignOut)
	r.HandleFunc(paths.Routes, s.handleRoutes)
	s.oauth.Mount(r)
	// The authenticate host.
	r.HandleFunc(paths.AuthenticateSignIn, s.sessions.AuthenticateSignIn)
	r.HandleFunc(paths.IdPCallback, s.sessions.Callback)

	hosted := s.hosts.Middleware(r)
	top := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == paths.Health {
			health(w, req)
			return
		}
		hosted.ServeHTTP(w, req)
	})
	return chain(top, reqid.Middleware, s.logRequests("public"), s.recoverer, securityHeaders, maxBody(maxPublicBody))
}

// buildInternal assembles the internal handler: the check API and the health probe.
func (s *Server) buildInternal() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(paths.Check, s.handleCheck)
	mux.HandleFunc(paths.Health, health)
	mux.HandleFunc("/", jsonNotFound)
	return chain(mux, reqid.Middleware, s.logRequests("internal"), s.recoverer, securityHeaders, maxBody(maxCheckBody))
}

// chain wraps h in middleware, the first outermost.
func chain(h http.Handler, mw ...func(http.Handler) http.Handler) http.Handler {
	for i := len(mw) - 1; i >= 0; i-- {
		h = mw[i](h)
	}
	return h
}

func health(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		jsonMethodNotAllowed(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("ok\n"))
}

type errorBody struct {
	Error       string `json:"error"`
	Description string `json:"error_description,omitempty"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func jsonNotFound(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusNotFound, errorBody{Error: "not_found", Description: "no such endpoint on this host"})
}

func jsonMethodNotAllowed(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusMethodNotAllowed, errorBody{Error: "invalid_request", Description: "method " + r.Method + " is not allowed here"})
}
