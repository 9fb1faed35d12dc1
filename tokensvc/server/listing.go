package server

import (
	"errors"
	"net/http"
	"strings"

	"github.com/mcpmesh/gateway/shared/pluginconf"
	"github.com/mcpmesh/gateway/shared/policy"
	"github.com/mcpmesh/gateway/tokensvc/check"
	"github.com/mcpmesh/gateway/tokensvc/hosts"
	"github.com/mcpmesh/gateway/tokensvc/oauth"
	"github.com/mcpmesh/gateway/tokensvc/store"
)

// ListedServer is one entry of the route listing (docs/token-service.md).
type ListedServer struct {
	Name      string `json:"name"`
	URL       string `json:"url"`
	Connected bool   `json:"connected"`
}

// RouteListing is the body of paths.Routes.
type RouteListing struct {
	Servers []ListedServer `json:"servers"`
}

// handleRoutes serves paths.Routes on mcp.client route hosts: the MCP servers of the
// gateway the user's policy lets them use, and whether the user has connected each one's
// upstream.
func (s *Server) handleRoutes(w http.ResponseWriter, r *http.Request) {
	h := hosts.MustFromContext(r.Context())
	token, ok := bearer(r)
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer`)
		writeJSON(w, http.StatusUnauthorized, errorBody{Error: "invalid_token", Description: "send Authorization: Bearer <token>"})
		return
	}
	sess, err := s.listingSession(r, h, token)
	if errors.Is(err, oauth.ErrInvalidToken) {
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
		writeJSON(w, http.StatusUnauthorized, errorBody{Error: "invalid_token", Description: "the token is not valid here"})
		return
	}
	if err != nil {
		s.log.ErrorContext(r.Context(), "route listing", "error", err.Error())
		writeJSON(w, http.StatusInternalServerError, errorBody{Error: "server_error"})
		return
	}
	out := RouteListing{Servers: []ListedServer{}}
	in := listingInput(&sess)
	for i := range s.cfg.Routes {
		rt := &s.cfg.Routes[i]
		ri, ok := s.checker.Route(rt.Normalized().ID)
		if !ok || ri.Kind != pluginconf.KindServer {
			continue
		}
		// A server the user's policy refuses is not listed: the listing must not tell a user
		// (or an application holding their token) about servers they may not use.
		if !ri.Policy.Evaluate(in).Allow {
			continue
		}
		name := rt.Name
		if name == "" {
			name = ri.ID
		}
		connected := true
		if ri.Upstream {
			// Connected: an Internal Token that is unexpired or can be refreshed.
			var err error
			connected, err = s.upstream.Connected(r.Context(), sess.Subject, ri.ID)
			if err != nil {
				s.log.ErrorContext(r.Context(), "route listing: read upstream token", "error", err.Error())
				writeJSON(w, http.StatusInternalServerError, errorBody{Error: "server_error"})
				return
			}
		}
		out.Servers = append(out.Servers, ListedServer{Name: name, URL: rt.From, Connected: connected})
	}
	writeJSON(w, http.StatusOK, out)
}

// listingInput is the policy input of the listing: the session's identity, as the filter
// sees it through the check API, making a request that is not a tool call (initialize, the
// first request of every MCP session). A server whose policy refuses it cannot be used at
// all; tool-level rules (mcp_tool) do not hide a server.
func listingInput(sess *store.Session) *policy.Input {
	id := check.Identity(sess)
	return &policy.Input{
		Authenticated: true, User: id.Subject, Email: id.Email, Name: id.Name,
		Groups: id.Groups, Claims: id.Claims, MCPMethod: "initialize",
	}
}

// listingSession validates token at one of h's mcp.client routes and returns its live
// session; oauth.ErrInvalidToken when there is none.
func (s *Server) listingSession(r *http.Request, h *hosts.Host, token string) (store.Session, error) {
	err := oauth.ErrInvalidToken
	for _, rt := range h.ClientRoutes() {
		var sess store.Session
		_, sess, err = s.checker.TokenSession(r.Context(), token, rt.Normalized().ID)
		if err == nil {
			return sess, nil
		}
		if !errors.Is(err, oauth.ErrInvalidToken) {
			return store.Session{}, err
		}
	}
	return store.Session{}, err
}

// bearer returns the token of an Authorization: Bearer header.
func bearer(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}
