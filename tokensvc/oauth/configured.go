package oauth

import (
	"slices"

	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/tokensvc/secret"
	"github.com/mcpmesh/gateway/tokensvc/store"
)

// Pre-registered clients (mcp_clients, docs/clients.md "Pre-registered clients") live in the
// configuration, not in the store: the server builds them once in New, and lookupClient finds
// them before it asks the store. They are store.ClientStatic clients. A client with allowed
// routes gets tokens for those routes only: at the authorization endpoint, at the token
// endpoint, and once more whenever a token is validated, so that a token outlives no change
// of the list.

// configuredClient is one entry of mcp_clients.
type configuredClient struct {
	client store.Client
	// routes are the IDs of the mcp.server routes the client may obtain tokens for; nil
	// means every one.
	routes []string
	// consent shows the consent page before a code is issued.
	consent bool
}

// newConfiguredClients builds the pre-registered clients of a validated cfg.
func newConfiguredClients(cfg *config.Config) map[string]configuredClient {
	out := make(map[string]configuredClient, len(cfg.MCPClients))
	for _, o := range cfg.MCPClients {
		c := store.Client{
			ID:                      o.ClientID,
			Kind:                    store.ClientStatic,
			Name:                    o.Name,
			RedirectURIs:            slices.Clone(o.RedirectURIs),
			GrantTypes:              slices.Clone(o.GrantTypes),
			TokenEndpointAuthMethod: o.TokenEndpointAuthMethod,
		}
		if slices.Contains(o.GrantTypes, grantAuthorizationCode) {
			c.ResponseTypes = []string{responseTypeCode}
		}
		if o.SecretResolved != "" {
			c.SecretHash = secret.Hash(o.SecretResolved)
		}
		out[o.ClientID] = configuredClient{client: c, routes: slices.Clone(o.RouteIDs), consent: o.Consent}
	}
	return out
}

// configuredClient returns the pre-registered client of id.
func (s *Server) configuredClient(id string) (configuredClient, bool) {
	c, ok := s.clients[id]
	return c, ok
}

// clientMayUse reports whether the client clientID may hold a token bound to resource (a
// resolved resource, or "" for an unbound token). Only pre-registered clients with allowed
// routes are restricted: their tokens must be bound to one of those routes.
func (s *Server) clientMayUse(clientID, resource string) bool {
	c, ok := s.clients[clientID]
	if !ok || c.routes == nil {
		return true
	}
	return slices.Contains(c.routes, resource)
}

// defaultResource returns the resource of a request by clientID that names none: the
// client's only allowed route when it has exactly one, else "" (unbound).
func (s *Server) defaultResource(clientID string) string {
	if c, ok := s.clients[clientID]; ok && len(c.routes) == 1 {
		return c.routes[0]
	}
	return ""
}

// showsConsent reports whether the user approves client c on the consent page: always for
// dynamically registered and metadata-document clients, for pre-registered ones when the
// operator asked for it.
func (s *Server) showsConsent(c store.Client) bool {
	if c.Kind != store.ClientStatic {
		return true
	}
	cc, ok := s.clients[c.ID]
	return ok && cc.consent
}
