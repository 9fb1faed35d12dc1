package paths

import "strings"

// Match is one path rule of a proxy's route configuration: an exact path, or a prefix that
// ends with "/" (so that it matches whole segments only).
type Match struct {
	// Path is the exact path, or the prefix when Prefix is set.
	Path string
	// Prefix makes Path a prefix match.
	Prefix bool
}

// Matches reports whether path is matched by m.
func (m Match) Matches(path string) bool {
	if m.Prefix {
		return strings.HasPrefix(path, m.Path)
	}
	return path == m.Path
}

// GatewayMatches returns the path rules that select exactly the paths IsGateway accepts, in
// the form route configurations take (Istio VirtualService `exact`/`prefix`, Gateway API
// `Exact`/`PathPrefix`, Envoy `path`/`prefix`). Prefixes end with "/": none of them matches
// "/.gateway-x" or "/.well-known/oauth-authorization-server-x". istio/render writes these for
// every route host; a fuzz test keeps them equal to IsGateway.
func GatewayMatches() []Match {
	return []Match{
		{Path: Prefix, Prefix: true},
		{Path: AuthorizationServerMetadata},
		{Path: AuthorizationServerMetadata + "/", Prefix: true},
		{Path: OpenIDConfiguration},
		{Path: OpenIDConfiguration + "/", Prefix: true},
		{Path: ProtectedResourceMetadata},
		{Path: ProtectedResourceMetadata + "/", Prefix: true},
		{Path: JWKS},
	}
}
