package checkapi

// KeyHeader carries the filter key (derived from shared_secret) on every check call.
const KeyHeader = "x-gateway-filter-key"

// SessionCookie is the name of the browser session cookie on route hosts. Its value is an
// opaque random token; the token service stores only its hash.
const SessionCookie = "_gateway_session"

// AssertionHeader is the identity assertion header supplied to upstreams. A client-supplied
// value is always removed.
const AssertionHeader = "x-gateway-assertion"

// FieldSessionKey is the JSON name of Response.SessionKey.
const FieldSessionKey = "session_key"

// Statuses of a Response.
const (
	StatusOK               = "ok"
	StatusInvalidToken     = "invalid_token"
	StatusNoSession        = "no_session"
	StatusUpstreamRequired = "upstream_required"
)

// Request asks for the decision bundle of one credential on one route. Exactly one of Token
// and Cookie is set.
type Request struct {
	// RouteID identifies the route (its normalised `from` URL).
	RouteID string `json:"route_id"`
	// Host is the request authority as the filter matched it (lower case, port kept when not
	// the scheme default); the assertion's audience.
	Host string `json:"host"`
	// Token is the bearer External Token from Authorization.
	Token string `json:"token,omitempty"`
	// Cookie is the value of SessionCookie (browser sessions on mcp.client and plain routes).
	Cookie string `json:"cookie,omitempty"`
	// RequestID is the proxy's request ID, for correlating logs.
	RequestID string `json:"request_id,omitempty"`
}

// Identity is who the credential belongs to.
type Identity struct {
	Subject string              `json:"sub"`
	Email   string              `json:"email,omitempty"`
	Name    string              `json:"name,omitempty"`
	Groups  []string            `json:"groups,omitempty"`
	Claims  map[string][]string `json:"claims,omitempty"`
}

// Response is the decision bundle.
type Response struct {
	Status string `json:"status"`
	// Identity is set when Status is StatusOK (and for StatusUpstreamRequired).
	Identity *Identity `json:"identity,omitempty"`
	// Assertion is the signed X-Gateway-Assertion JWT for Request.Host.
	Assertion string `json:"assertion,omitempty"`
	// UpstreamToken is the Internal Token for routes with upstream_oauth2.
	UpstreamToken string `json:"upstream_token,omitempty"`
	// ClientToken is the External Token handed to mcp.client backends for a cookie session.
	ClientToken string `json:"client_token,omitempty"`
	// SessionKey (unpadded base64url, 32 bytes) keys the MAC with which the filter binds the
	// MCP session IDs of this user on this route (MCP server routes only). It is derived from
	// shared_secret, the subject and the route ID, so every replica gives the same key.
	SessionKey string `json:"session_key,omitempty"`
	// ExpiresAt (Unix seconds) bounds how long the filter may cache this bundle.
	ExpiresAt int64 `json:"expires_at,omitempty"`
	// ConnectURL is where the user completes upstream OAuth (StatusUpstreamRequired).
	ConnectURL string `json:"connect_url,omitempty"`
	// Error and ErrorDescription explain a refusal; never secret-bearing.
	Error            string `json:"error,omitempty"`
	ErrorDescription string `json:"error_description,omitempty"`
}
