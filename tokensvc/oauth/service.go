package oauth

import (
	"context"
	"net/url"
	"slices"

	"github.com/mcpmesh/gateway/tokensvc/hosts"
	"github.com/mcpmesh/gateway/tokensvc/store"
)

// Service identities (docs/clients.md "Service identities"; the OAuth client credentials
// extension of MCP). A pre-registered confidential client whose grant_types include
// client_credentials obtains access tokens for itself, with no user: the token's subject is
// ServiceSubject(client ID), it has no session, no grant and so no refresh token, and it is
// bound to one of the client's routes (mcp_clients[].routes, required for such a client). The
// check API gives it the identity {sub: "client:<id>"} with no email, name or groups, and its
// client ID, which the policy criterion client_id matches.

const grantClientCredentials = "client_credentials"

// ServiceSubjectPrefix starts the subject of every service identity. Sign-in refuses an
// identity provider subject that starts with it (package session), so that a person can never
// be taken for a service.
const ServiceSubjectPrefix = "client:"

// ServiceSubject is the subject of the service identity of the pre-registered client
// clientID.
func ServiceSubject(clientID string) string { return ServiceSubjectPrefix + clientID }

// IsServiceToken reports whether t was issued by the client credentials grant: it has no
// session and no grant, and its subject is its client's service subject.
func IsServiceToken(t store.AccessToken) bool {
	return t.SessionID == "" && t.GrantID == "" && t.ClientID != "" && t.Subject == ServiceSubject(t.ClientID)
}

// isServiceClient reports whether clientID is a pre-registered client that may use the
// client_credentials grant now (the configuration may have changed since a token was issued).
func (s *Server) isServiceClient(clientID string) bool {
	c, ok := s.configuredClient(clientID)
	return ok && slices.Contains(c.client.GrantTypes, grantClientCredentials)
}

// grantClientCredentials issues a service token (RFC 6749 §4.4) to an authenticated
// pre-registered client.
func (s *Server) grantClientCredentials(ctx context.Context, h *hosts.Host, client store.Client, form url.Values) (tokenResponse, *oauthError) {
	cc, ok := s.configuredClient(client.ID)
	if !ok || !slices.Contains(client.GrantTypes, grantClientCredentials) || client.TokenEndpointAuthMethod == authNone {
		return tokenResponse{}, newError(errUnauthorizedClient, "the client is not registered for the client_credentials grant")
	}
	var resource string
	if form.Has("resource") {
		res, oerr := resolveResources(h, form["resource"])
		if oerr != nil {
			return tokenResponse{}, oerr
		}
		resource = res
	} else if len(cc.routes) == 1 {
		resource = cc.routes[0]
	}
	switch {
	case resource == "":
		return tokenResponse{}, newError(errInvalidTarget, "resource is required: name the MCP server the token is for")
	case !slices.Contains(cc.routes, resource):
		s.log.InfoContext(ctx, "oauth: client credentials for a route outside the client's list", "client_id", client.ID, "resource", resource)
		return tokenResponse{}, newError(errInvalidTarget, "this client may not obtain tokens for this MCP server")
	case !hostServes(h, resource):
		return tokenResponse{}, newError(errInvalidTarget, "request the token at the authorization server of the MCP server's host")
	}
	if _, ok := parseScope(form.Get("scope")); !ok {
		return tokenResponse{}, newError(errInvalidScope, "scope is malformed")
	}
	at, exp, oerr := s.createAccessToken(ctx, store.AccessToken{
		ClientID: client.ID,
		Subject:  ServiceSubject(client.ID),
		Scope:    scopeMCP,
		Resource: resource,
	})
	if oerr != nil {
		return tokenResponse{}, oerr
	}
	s.events.ServiceTokenIssued()
	s.log.InfoContext(ctx, "oauth: service token issued", "client_id", client.ID, "resource", resource)
	return s.tokenResponse(at, exp, "", scopeMCP), nil
}
