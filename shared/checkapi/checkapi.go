package checkapi

import "github.com/mcpmesh/gateway/shared/jsontext"

// KeyHeader carries the filter key (derived from shared_secret) on every check call.
const KeyHeader = "x-gateway-filter-key"

// AssertionHeader is the identity assertion header supplied to upstreams. A client-supplied
// value is always removed.
const AssertionHeader = "x-gateway-assertion"

// CookiePrefix starts the name of every cookie the gateway sets, on route hosts and on the
// authenticate host. The filter forwards none of them to an upstream, and lets no upstream set
// one.
const CookiePrefix = "_gateway_"

// SessionCookie is the name of the browser session cookie on route hosts. Its value is an
// opaque random token; the token service stores only its hash.
const SessionCookie = CookiePrefix + "session"

// Statuses of a Response.
const (
	StatusOK               = "ok"
	StatusInvalidToken     = "invalid_token"
	StatusNoSession        = "no_session"
	StatusUpstreamRequired = "upstream_required"
)

// HTTPStatus returns the HTTP status that an answer with status carries, or 0 for a status
// the filter does not act on. The filter takes an answer only when both agree; anything else
// fails closed.
func HTTPStatus(status string) int {
	switch status {
	case StatusOK:
		return 200
	case StatusInvalidToken, StatusNoSession, StatusUpstreamRequired:
		return 401
	}
	return 0
}

// JSON member names of Request, Response and Identity: the filter reads and writes them by
// name, without encoding/json (see AppendRequest).
const (
	FieldRouteID   = "route_id"
	FieldHost      = "host"
	FieldToken     = "token"
	FieldCookie    = "cookie"
	FieldRequestID = "request_id"

	FieldStatus        = "status"
	FieldIdentity      = "identity"
	FieldAssertion     = "assertion"
	FieldUpstreamToken = "upstream_token"
	FieldClientToken   = "client_token"
	FieldSessionKey    = "session_key"
	FieldExpiresAt     = "expires_at"

	FieldSubject = "sub"
	FieldEmail   = "email"
	FieldName    = "name"
	FieldGroups  = "groups"
	FieldClaims  = "claims"
	// FieldClientID is the OAuth client the token was issued to (Identity.ClientID).
	FieldClientID = "client_id"
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

// AppendRequest appends the JSON of a Request to dst, with the credential as Token, or as
// Cookie when cookie is set, and returns the extended slice. It allocates nothing but dst's
// growth: the filter builds one per check call.
func AppendRequest(dst []byte, routeID, host string, cookie bool, credential, requestID string) []byte {
	dst = append(dst, `{"`+FieldRouteID+`":`...)
	dst = jsontext.AppendString(dst, routeID)
	dst = append(dst, `,"`+FieldHost+`":`...)
	dst = jsontext.AppendString(dst, host)
	if cookie {
		dst = append(dst, `,"`+FieldCookie+`":`...)
	} else {
		dst = append(dst, `,"`+FieldToken+`":`...)
	}
	dst = jsontext.AppendString(dst, credential)
	if requestID != "" {
		dst = append(dst, `,"`+FieldRequestID+`":`...)
		dst = jsontext.AppendString(dst, requestID)
	}
	return append(dst, '}')
}

// Identity is who the credential belongs to.
type Identity struct {
	Subject string              `json:"sub"`
	Email   string              `json:"email,omitempty"`
	Name    string              `json:"name,omitempty"`
	Groups  []string            `json:"groups,omitempty"`
	Claims  map[string][]string `json:"claims,omitempty"`
	// ClientID is the OAuth client the External Token was issued to ("" for a browser
	// session): the policy criterion client_id and the record field client-id. A service
	// identity (client credentials) has Subject "client:<ClientID>" and no email, name or
	// groups.
	ClientID string `json:"client_id,omitempty"`
}

// Response is the decision bundle.
type Response struct {
	Status string `json:"status"`
	// Identity is set when Status is StatusOK (and for StatusUpstreamRequired: the user has
	// no usable Internal Token for the route, and must sign in again so that the connect
	// flow runs; the filter answers 401 invalid_token).
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
	// Error and ErrorDescription explain a refusal; never secret-bearing.
	Error            string `json:"error,omitempty"`
	ErrorDescription string `json:"error_description,omitempty"`
}
