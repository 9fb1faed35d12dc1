package oauth

// Events receives the authorization server's security and lifecycle events, for metrics.
// Implementations must be safe for concurrent use and must not block: they are called on the
// request path. The default discards every event.
type Events interface {
	// TokensIssued: an authorization code was redeemed for tokens.
	TokensIssued()
	// ClientTokenIssued: IssueClientToken minted the token of an mcp.client route.
	ClientTokenIssued()
	// ServiceTokenIssued: the client_credentials grant issued a service identity's token.
	ServiceTokenIssued()
	// TokensRefreshed: a refresh token was rotated and a new access token issued.
	TokensRefreshed()
	// RefreshReused: a refresh token that had already been rotated came back; its grant is
	// revoked.
	RefreshReused()
	// CodeReplayed: an authorization code that had already been redeemed came back; what it
	// yielded is revoked.
	CodeReplayed()
	// Registration: a dynamic client registration ended with outcome, one of the
	// Registration* constants.
	Registration(outcome string)
	// MetadataDocumentFetch: a client ID metadata document was fetched (not served from the
	// cache) with outcome, one of the Document* constants.
	MetadataDocumentFetch(outcome string)
}

// Registration outcomes.
const (
	RegistrationCreated     = "created"
	RegistrationRateLimited = "rate_limited"
	RegistrationInvalid     = "invalid"
	RegistrationError       = "error" // the store failed
)

// Client ID metadata document fetch outcomes.
const (
	DocumentFetched     = "fetched"           // fetched and valid
	DocumentUnreachable = "unreachable"       // the request failed
	DocumentForbidden   = "forbidden_address" // the host resolves to a non-public address
	DocumentInvalid     = "invalid"           // bad status, media type, size or content
)

// WithEvents sets the receiver of the server's events (default: none).
func WithEvents(e Events) Option { return func(s *Server) { s.events = e } }

// noEvents discards every event.
type noEvents struct{}

func (noEvents) TokensIssued()                {}
func (noEvents) ClientTokenIssued()           {}
func (noEvents) ServiceTokenIssued()          {}
func (noEvents) TokensRefreshed()             {}
func (noEvents) RefreshReused()               {}
func (noEvents) CodeReplayed()                {}
func (noEvents) Registration(string)          {}
func (noEvents) MetadataDocumentFetch(string) {}
