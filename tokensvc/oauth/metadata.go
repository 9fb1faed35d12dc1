package oauth

import (
	"net/http"
	"slices"
	"strings"

	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/tokensvc/hosts"
)

// Values advertised in the metadata and enforced by the endpoints.
var (
	supportedGrantTypes  = []string{grantAuthorizationCode, grantRefreshToken}
	supportedAuthMethods = []string{authNone, authSecretBasic, authSecretPost, authPrivateKeyJWT}
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

// advertisedGrantTypes are the grant types of the AS metadata: those of every client, and
// client_credentials when a pre-registered client may use it (dynamic registration never
// grants it).
func (s *Server) advertisedGrantTypes() []string {
	for _, c := range s.clients {
		if slices.Contains(c.client.GrantTypes, grantClientCredentials) {
			return append(slices.Clone(supportedGrantTypes), grantClientCredentials)
		}
	}
	return supportedGrantTypes
}

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
	TokenEndpointAuthSigningAlgValuesSupported []string `json:"token_endpoint_auth_signing_alg_values_supported"`
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
		GrantTypesSupported:                        s.advertisedGrantTypes(),
		CodeChallengeMethodsSupported:              []string{"S256"},
		TokenEndpointAuthMethodsSupported:          supportedAuthMethods,
		TokenEndpointAuthSigningAlgValuesSupported: assertionAlgNames(),
		RevocationEndpointAuthMethodsSupported:     supportedAuthMethods,
		ScopesSupported:                            asScopes,
		ClientIDMetadataDocumentSupported:          true,
		AuthorizationResponseIssParameterSupported: true,
	})
}

// handlePRMetadata serves RFC 9728 metadata: path-aware for every path an mcp.server route
// serves (/.well-known/oauth-protected-resource/mcp/x names https://host/mcp/x, the URL asked
// about, RFC 9728 §3.1, and describes the route that serves it: the longest path prefix, as
// the data path's route match), and host-level (the bare path names the origin, RFC 9728
// §3.3: the route whose from is the bare origin, or else every mcp.server route of the
// host). The filter's 401 challenge names the metadata URL of the route's own from, whose
// resource is therefore the route's from, so a client that compares the two (the MCP SDKs
// do) finds them equal; resource.go binds a token requested for any of these URLs to the
// route.
func (s *Server) handlePRMetadata(w http.ResponseWriter, r *http.Request, h *hosts.Host) {
	suffix := strings.TrimPrefix(r.URL.EscapedPath(), paths.ProtectedResourceMetadata)
	if suffix == "" {
		suffix = "/"
	}
	if !strings.HasPrefix(suffix, "/") {
		notFound(w, r, h)
		return
	}
	resourceURL := h.Origin + suffix
	if suffix == "/" {
		resourceURL = h.Origin
	}
	bound, problem := resolveResource(h, resourceURL)
	if problem != resourceOK {
		notFound(w, r, h)
		return
	}
	name := ""
	if rt, ok := serverRoute(h, bound); ok {
		name = rt.Name
	} else if routes := h.ServerRoutes(); len(routes) == 1 {
		name = routes[0].Name
	}
	pr, _ := parseResource(resourceURL)
	resource := h.Origin
	if pr.path != "/" {
		resource += pr.path
	}
	writeJSON(w, http.StatusOK, prMetadata{
		Resource:               resource,
		AuthorizationServers:   []string{h.Origin},
		BearerMethodsSupported: []string{"header"},
		ScopesSupported:        prScopes,
		ResourceName:           name,
	})
}
