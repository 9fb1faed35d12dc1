package oauth

import (
	"net/http"
	"strings"

	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/tokensvc/hosts"
)

// Values advertised in the metadata and enforced by the endpoints.
var (
	supportedScopes      = []string{scopeOfflineAccess}
	supportedGrantTypes  = []string{grantAuthorizationCode, grantRefreshToken}
	supportedAuthMethods = []string{authNone, authSecretBasic, authSecretPost}
)

// Protocol names.
const (
	grantAuthorizationCode = "authorization_code"
	grantRefreshToken      = "refresh_token"
	responseTypeCode       = "code"
	authNone               = "none"
	authSecretBasic        = "client_secret_basic"
	authSecretPost         = "client_secret_post"
	scopeOfflineAccess     = "offline_access"
)

// asMetadata is RFC 8414 authorization server metadata.
type asMetadata struct {
	Issuer                                     string   `json:"issuer"`
	AuthorizationEndpoint                      string   `json:"authorization_endpoint"`
	TokenEndpoint                              string   `json:"token_endpoint"`
	RegistrationEndpoint                       string   `json:"registration_endpoint"`
	RevocationEndpoint                         string   `json:"revocation_endpoint"`
	ResponseTypesSupported                     []string `json:"response_types_supported"`
	ResponseModesSupported                     []string `json:"response_modes_supported"`
	GrantTypesSupported                        []string `json:"grant_types_supported"`
	CodeChallengeMethodsSupported              []string `json:"code_challenge_methods_supported"`
	TokenEndpointAuthMethodsSupported          []string `json:"token_endpoint_auth_methods_supported"`
	RevocationEndpointAuthMethodsSupported     []string `json:"revocation_endpoint_auth_methods_supported"`
	ScopesSupported                            []string `json:"scopes_supported"`
	ClientIDMetadataDocumentSupported          bool     `json:"client_id_metadata_document_supported"`
	AuthorizationResponseIssParameterSupported bool     `json:"authorization_response_iss_parameter_supported"`
}

// prMetadata is RFC 9728 protected resource metadata.
type prMetadata struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers"`
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
	ScopesSupported        []string `json:"scopes_supported"`
	ResourceName           string   `json:"resource_name,omitempty"`
}

func (s *Server) handleASMetadata(w http.ResponseWriter, r *http.Request, h *hosts.Host) {
	o := h.Origin
	writeJSON(w, http.StatusOK, asMetadata{
		Issuer:                                     o,
		AuthorizationEndpoint:                      o + paths.Authorize,
		TokenEndpoint:                              o + paths.Token,
		RegistrationEndpoint:                       o + paths.Register,
		RevocationEndpoint:                         o + paths.Revoke,
		ResponseTypesSupported:                     []string{responseTypeCode},
		ResponseModesSupported:                     []string{"query"},
		GrantTypesSupported:                        supportedGrantTypes,
		CodeChallengeMethodsSupported:              []string{"S256"},
		TokenEndpointAuthMethodsSupported:          supportedAuthMethods,
		RevocationEndpointAuthMethodsSupported:     supportedAuthMethods,
		ScopesSupported:                            supportedScopes,
		ClientIDMetadataDocumentSupported:          true,
		AuthorizationResponseIssParameterSupported: true,
	})
}

// handlePRMetadata serves RFC 9728 metadata: path-aware
// (/.well-known/oauth-protected-resource/mcp describes the mcp.server route
// covering /mcp, the longest path prefix winning) and host-level (the bare
// path describes the origin: every mcp.server route of the host).
func (s *Server) handlePRMetadata(w http.ResponseWriter, r *http.Request, h *hosts.Host) {
	suffix := strings.TrimPrefix(r.URL.EscapedPath(), paths.ProtectedResourceMetadata)
	var (
		resource, name string
		ok             bool
	)
	if suffix == "" || suffix == "/" {
		resource, name, ok = hostResource(h)
	} else {
		var rt *config.Route
		rt, ok = routeForPath(h, suffix)
		if ok {
			resource, name = rt.Normalized().ID, rt.Name
		}
	}
	if !ok {
		notFound(w, r, h)
		return
	}
	writeJSON(w, http.StatusOK, prMetadata{
		Resource:               resource,
		AuthorizationServers:   []string{h.Origin},
		BearerMethodsSupported: []string{"header"},
		ScopesSupported:        supportedScopes,
		ResourceName:           name,
	})
}

// hostResource is the resource of the host-level metadata: the origin, as
// RFC 9728 §3.3 requires (the resource identifier is the URL the well-known
// path was inserted into, here one without a path; strict clients such as
// the MCP Go SDK check it). A token requested for it is valid at every
// mcp.server route of the host. The name is that of the host's MCP server
// when it has only one.
func hostResource(h *hosts.Host) (resource, name string, ok bool) {
	routes := h.ServerRoutes()
	switch len(routes) {
	case 0:
		return "", "", false
	case 1:
		return h.Origin, routes[0].Name, true
	}
	return h.Origin, "", true
}

// routeForPath returns the mcp.server route of h whose path prefix covers
// path (an escaped path starting with "/"), the longest prefix winning.
func routeForPath(h *hosts.Host, path string) (*config.Route, bool) {
	if !strings.HasPrefix(path, "/") || strings.Contains(path, "%") || strings.Contains(path, "//") || strings.Contains(path, "/.") {
		return nil, false
	}
	if len(path) > 1 {
		path = strings.TrimSuffix(path, "/")
	}
	var best *config.Route
	bestLen := -1
	for _, rt := range h.ServerRoutes() {
		p := rt.Normalized().PathPrefix
		if p == "/" || path == p || strings.HasPrefix(path, p+"/") {
			if len(p) > bestLen {
				best, bestLen = rt, len(p)
			}
		}
	}
	return best, best != nil
}
