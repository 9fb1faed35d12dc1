package store

import (
	"context"
	"errors"
	"time"
)

// Sentinel errors. Backends wrap them; branch with errors.Is.
var (
	// ErrNotFound means the record does not exist, has expired, or has been
	// revoked or consumed, whichever applies to the operation.
	ErrNotFound = errors.New("store: not found")
	// ErrAlreadyExists means a create operation found its key taken.
	ErrAlreadyExists = errors.New("store: already exists")
	// ErrRefreshReused means a refresh token that had already been rotated was
	// presented again. The store has revoked the token's whole grant (its
	// refresh tokens and access tokens) before returning it; the OAuth server
	// answers invalid_grant.
	ErrRefreshReused = errors.New("store: refresh token reused; grant revoked")
	// ErrConflict means an optimistic update lost a race: the record changed
	// since it was read (see [Session.Version]). Read it again and retry.
	ErrConflict = errors.New("store: record changed concurrently")
)

// Time converts t to the form every backend stores and returns: UTC,
// truncated to the microsecond. The zero time stays zero. Callers comparing a
// record read back with the one they wrote compare against Time(t).
func Time(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC().Truncate(time.Microsecond)
}

// ClientKind says how an OAuth client came to be known.
type ClientKind string

// Client kinds.
const (
	// ClientDynamic is a client registered by Dynamic Client Registration
	// (RFC 7591). Unused registrations expire.
	ClientDynamic ClientKind = "dynamic"
	// ClientMetadataDocument is a client identified by the URL of its client
	// ID metadata document; the record caches the fetched document.
	ClientMetadataDocument ClientKind = "metadata_document"
	// ClientStatic is a client configured by the operator.
	ClientStatic ClientKind = "static"
)

// Client is an OAuth client of the authorization server.
type Client struct {
	ID         string
	Kind       ClientKind
	SecretHash []byte // hash of the client secret; empty for public clients
	Name       string
	// RedirectURIs, GrantTypes and ResponseTypes are kept in order.
	RedirectURIs            []string
	GrantTypes              []string
	ResponseTypes           []string
	TokenEndpointAuthMethod string
	Scope                   string // space-separated
	CreatedAt               time.Time
	ExpiresAt               time.Time // zero: never expires
	LastUsedAt              time.Time // zero: never used
}

// AuthCode is an authorization code awaiting redemption. It is single-use.
type AuthCode struct {
	Hash          []byte // SHA-256 of the code
	ClientID      string
	SessionID     string
	Subject       string
	RedirectURI   string
	CodeChallenge string // S256 PKCE challenge
	Scope         string
	Resource      string // RFC 8707 resource; empty: not bound
	CreatedAt     time.Time
	ExpiresAt     time.Time
}

// Grant is a refresh-token family: one authorization of one client by one
// user. Revoking a grant invalidates all its refresh and access tokens.
type Grant struct {
	ID        string
	ClientID  string
	SessionID string // the session the grant was made in; may be empty
	Subject   string
	Scope     string
	Resource  string
	CreatedAt time.Time
	ExpiresAt time.Time // end of the family's life, refresh included
	RevokedAt time.Time // zero: not revoked
}

// RefreshToken is one member of a grant's refresh-token family.
type RefreshToken struct {
	Hash      []byte // SHA-256 of the token
	GrantID   string
	CreatedAt time.Time
	ExpiresAt time.Time
	UsedAt    time.Time // zero: not yet rotated
}

// AccessToken is an External Token (TE) issued by the gateway.
type AccessToken struct {
	Hash      []byte // SHA-256 of the token
	GrantID   string // empty for a token issued outside a grant
	ClientID  string
	SessionID string // empty for a token not bound to a session
	Subject   string
	Scope     string
	Resource  string // RFC 8707 resource; empty: valid at every MCP server route
	CreatedAt time.Time
	ExpiresAt time.Time
}

// Session is a user's sign-in at the identity provider.
type Session struct {
	ID             string
	Subject        string
	Email          string
	Name           string
	Groups         []string
	Claims         []byte // JSON object of the identity claims
	IDPTokens      []byte // sealed IDP tokens (refresh token included)
	IDPTokenExpiry time.Time
	CreatedAt      time.Time
	ExpiresAt      time.Time // cookie_expiration
	RevokedAt      time.Time // zero: not revoked
	// Version is maintained by the store: CreateSession stores 1, and each
	// successful UpdateSession increments it. UpdateSession succeeds only if
	// the caller's Version equals the stored one.
	Version int64
}

// BrowserCookie is a session cookie bound to one host.
type BrowserCookie struct {
	Hash      []byte // SHA-256 of the cookie value
	SessionID string
	Host      string
	CreatedAt time.Time
	ExpiresAt time.Time
}

// UpstreamToken is the sealed Internal Token (TI) of one user for one route's
// upstream OAuth provider.
type UpstreamToken struct {
	Subject string
	RouteID string
	Sealed  []byte
	// ExpiresAt is when the record itself becomes garbage (for example when
	// the sealed refresh token expires), not the TI's access-token expiry,
	// which lives inside Sealed. Zero: never.
	ExpiresAt time.Time
	UpdatedAt time.Time
}

// UpstreamClient is the gateway's own client registration at an upstream
// authorization server (RFC 7591 dynamic registration of an upstream_discovery
// route, docs/upstream-discovery.md), shared by every user and replica. It is
// named by the server's issuer and the redirect URI registered (the route
// host's upstream callback).
type UpstreamClient struct {
	Issuer      string
	RedirectURI string
	Sealed      []byte // the sealed client credentials
	// ExpiresAt is when the registration lapses (the server's
	// client_secret_expires_at). Zero: never.
	ExpiresAt time.Time
	CreatedAt time.Time
}

// OneTime is a generic single-use value: sign-in state, cross-host handoff,
// consent, connect-flow state. Kind names the purpose so a value minted for
// one purpose cannot be spent on another.
type OneTime struct {
	Hash      []byte // SHA-256 of the value
	Kind      string
	Payload   []byte
	ExpiresAt time.Time
}

// Clients stores OAuth clients.
type Clients interface {
	// CreateClient stores c; ErrAlreadyExists if c.ID is taken.
	CreateClient(ctx context.Context, c Client) error
	// GetClient returns the client; ErrNotFound if unknown or expired at now.
	GetClient(ctx context.Context, id string, now time.Time) (Client, error)
	// TouchClient records a use at usedAt and extends the client's expiry to
	// expiresAt if that is later than the stored one. A client that never
	// expires keeps never expiring; a zero expiresAt leaves expiry unchanged.
	// ErrNotFound if unknown.
	TouchClient(ctx context.Context, id string, usedAt, expiresAt time.Time) error
	// DeleteClient removes the client; ErrNotFound if unknown.
	DeleteClient(ctx context.Context, id string) error
}

// AuthCodes stores authorization codes.
type AuthCodes interface {
	// CreateAuthCode stores c; ErrAlreadyExists if c.Hash is taken.
	CreateAuthCode(ctx context.Context, c AuthCode) error
	// GetAuthCode returns the code without consuming it, so the caller can
	// check its bindings (client, redirect URI, PKCE verifier) before
	// spending it with TakeAuthCode. ErrNotFound if unknown, taken, or
	// expired at now.
	GetAuthCode(ctx context.Context, hash []byte, now time.Time) (AuthCode, error)
	// TakeAuthCode atomically removes and returns the code. Of concurrent
	// callers exactly one gets it; the others, and any caller after expiry,
	// get ErrNotFound.
	TakeAuthCode(ctx context.Context, hash []byte, now time.Time) (AuthCode, error)
}

// Grants stores grants and their refresh tokens.
type Grants interface {
	// CreateGrant stores g and its first refresh token (first.GrantID is set
	// to g.ID). ErrAlreadyExists if g.ID or first.Hash is taken. If
	// g.SessionID is set, the session must exist and not be revoked, else
	// ErrNotFound: a grant cannot outlive a concurrent sign-out.
	CreateGrant(ctx context.Context, g Grant, first RefreshToken) error
	// GetGrant returns the grant as stored, revoked or expired included;
	// ErrNotFound if unknown.
	GetGrant(ctx context.Context, id string) (Grant, error)
	// GetRefreshToken returns a refresh token and its grant, so the caller
	// can check the client before rotating or revoking. A token already
	// rotated is returned with UsedAt set. ErrNotFound if unknown, expired at
	// now, or its grant is revoked or expired.
	GetRefreshToken(ctx context.Context, hash []byte, now time.Time) (RefreshToken, Grant, error)
	// RotateRefreshToken atomically spends the refresh token oldHash and
	// stores next (next.GrantID is set to the old token's grant), returning
	// the grant. Of concurrent callers exactly one succeeds.
	//   - unknown, expired, or grant revoked or expired: ErrNotFound;
	//   - already rotated: the grant is revoked (with its access tokens) at
	//     now and ErrRefreshReused is returned.
	RotateRefreshToken(ctx context.Context, oldHash []byte, next RefreshToken, now time.Time) (Grant, error)
	// RotateRefreshTokenWithin is RotateRefreshToken with a reuse interval
	// for concurrent refreshes. When oldHash was already rotated no more than
	// reuse before now (now - UsedAt <= reuse), and next.Hash is a live,
	// unrotated refresh token of the same grant (the successor that first
	// rotation stored), it changes nothing and returns the grant: the caller
	// hands out that same successor again. Every other reuse revokes the
	// grant and returns ErrRefreshReused, as RotateRefreshToken does. A reuse
	// of 0 is RotateRefreshToken. Of concurrent callers presenting the same
	// old token and the same next, one rotates and the others are granted by
	// the interval: the family keeps one live refresh token.
	RotateRefreshTokenWithin(ctx context.Context, oldHash []byte, next RefreshToken, now time.Time, reuse time.Duration) (Grant, error)
	// RevokeGrant revokes the grant at now: its refresh tokens stop working
	// and its access tokens are deleted. Revoking a revoked grant is a no-op
	// that keeps the first RevokedAt. ErrNotFound if unknown.
	RevokeGrant(ctx context.Context, id string, now time.Time) error
	// ListGrantsBySession returns every stored grant of the session, revoked
	// and expired included, oldest first. An empty sessionID has none.
	ListGrantsBySession(ctx context.Context, sessionID string) ([]Grant, error)
	// RevokeGrantsBySession revokes every unrevoked grant of the session at
	// now, as RevokeGrant does, and returns how many it revoked. An empty
	// sessionID revokes nothing (it does not mean "grants without a session").
	RevokeGrantsBySession(ctx context.Context, sessionID string, now time.Time) (int64, error)
}

// AccessTokens stores access tokens (External Tokens).
type AccessTokens interface {
	// CreateAccessToken stores t; ErrAlreadyExists if t.Hash is taken.
	CreateAccessToken(ctx context.Context, t AccessToken) error
	// GetAccessToken returns the token; ErrNotFound if unknown, expired at
	// now, its grant (if any) is revoked or gone, or its session (if any) is
	// revoked or gone.
	GetAccessToken(ctx context.Context, hash []byte, now time.Time) (AccessToken, error)
	// DeleteAccessToken removes the token; ErrNotFound if unknown.
	DeleteAccessToken(ctx context.Context, hash []byte) error
}

// Sessions stores identity-provider sign-ins.
type Sessions interface {
	// CreateSession stores s with Version 1; ErrAlreadyExists if s.ID is taken.
	CreateSession(ctx context.Context, s Session) error
	// GetSession returns the session, EXPIRED ONES INCLUDED: a refresh after
	// cookie_expiration recreates the session from its stored IDP tokens, so
	// the caller checks ExpiresAt itself. ErrNotFound if unknown or revoked.
	GetSession(ctx context.Context, id string) (Session, error)
	// UpdateSession replaces the mutable fields of the stored session
	// (Email, Name, Groups, Claims, IDPTokens, IDPTokenExpiry, ExpiresAt)
	// with those of s, provided s.Version equals the stored version, and
	// returns the new version. ErrConflict if the version differs;
	// ErrNotFound if unknown or revoked.
	UpdateSession(ctx context.Context, s Session) (int64, error)
	// RevokeSession revokes the session at now (sign-out). In the same
	// operation it revokes every grant of the session (as RevokeGrant does)
	// and deletes the session's browser cookies; access tokens bound to the
	// session stop validating. ErrNotFound if unknown; revoking a revoked
	// session is a no-op.
	RevokeSession(ctx context.Context, id string, now time.Time) error
}

// BrowserCookies stores host-bound session cookies.
type BrowserCookies interface {
	// CreateBrowserCookie stores c; ErrAlreadyExists if c.Hash is taken.
	CreateBrowserCookie(ctx context.Context, c BrowserCookie) error
	// GetBrowserCookie returns the cookie and its session, valid together:
	// ErrNotFound if the cookie is unknown, bound to a host other than host,
	// or expired at now, or its session is gone, revoked or expired at now.
	GetBrowserCookie(ctx context.Context, hash []byte, host string, now time.Time) (BrowserCookie, Session, error)
	// DeleteBrowserCookie removes the cookie; ErrNotFound if unknown.
	DeleteBrowserCookie(ctx context.Context, hash []byte) error
}

// UpstreamTokens stores sealed Internal Tokens.
type UpstreamTokens interface {
	// PutUpstreamToken inserts or replaces the token of (t.Subject, t.RouteID).
	PutUpstreamToken(ctx context.Context, t UpstreamToken) error
	// GetUpstreamToken returns the token; ErrNotFound if unknown or its
	// record expired at now (see UpstreamToken.ExpiresAt).
	GetUpstreamToken(ctx context.Context, subject, routeID string, now time.Time) (UpstreamToken, error)
	// DeleteUpstreamToken removes the token; ErrNotFound if unknown.
	DeleteUpstreamToken(ctx context.Context, subject, routeID string) error
}

// UpstreamLeases serialise the refreshes of one Internal Token across every
// replica sharing the store: an upstream refresh token is spent by the one
// holder of the token's refresh lease. A lease is named by its holder (a
// random value the caller makes per refresh) and lasts until a time the
// caller chooses, longer than the refresh can take. PutUpstreamToken and
// DeleteUpstreamToken end any lease of the token they write or remove.
type UpstreamLeases interface {
	// LeaseUpstreamToken gives holder the refresh lease of (subject, routeID)
	// until `until` and returns the token as stored at that moment. It fails
	// with ErrConflict if another holder's lease is live at now (now <
	// its until), and with ErrNotFound if there is no token or its record
	// expired at now. A holder may renew its own lease.
	LeaseUpstreamToken(ctx context.Context, subject, routeID, holder string, until, now time.Time) (UpstreamToken, error)
	// ReplaceLeasedUpstreamToken replaces Sealed, ExpiresAt and UpdatedAt of
	// the token (t.Subject, t.RouteID) and ends the lease, provided holder
	// still holds it: its lease may have run out, but nobody may have leased,
	// put or deleted the token since. ErrConflict if holder no longer holds
	// the lease; ErrNotFound if the token is gone.
	ReplaceLeasedUpstreamToken(ctx context.Context, t UpstreamToken, holder string) error
	// ReleaseUpstreamLease ends holder's lease of (subject, routeID), leaving
	// the token as it is, or deleting it when remove is set (the upstream
	// refused its refresh token). ErrConflict if holder no longer holds the
	// lease; ErrNotFound if the token is gone.
	ReleaseUpstreamLease(ctx context.Context, subject, routeID, holder string, remove bool) error
}

// UpstreamClients stores the gateway's registrations at upstream
// authorization servers.
type UpstreamClients interface {
	// CreateUpstreamClient stores c; ErrAlreadyExists if a registration of
	// (c.Issuer, c.RedirectURI) is stored, expired or not (of replicas that
	// register at once, the first wins and the others read its registration).
	CreateUpstreamClient(ctx context.Context, c UpstreamClient) error
	// GetUpstreamClient returns the registration; ErrNotFound if unknown or
	// expired at now.
	GetUpstreamClient(ctx context.Context, issuer, redirectURI string, now time.Time) (UpstreamClient, error)
	// DeleteUpstreamClient removes the registration (the server no longer
	// knows it, or it expired) provided it is still the one created at
	// createdAt, so that a replica does not remove a newer registration
	// another replica made meanwhile. ErrNotFound if there is no such one.
	DeleteUpstreamClient(ctx context.Context, issuer, redirectURI string, createdAt time.Time) error
}

// OneTimes stores single-use values.
type OneTimes interface {
	// PutOneTime stores v; ErrAlreadyExists if v.Hash is taken.
	PutOneTime(ctx context.Context, v OneTime) error
	// GetOneTime returns the value of that hash and kind without consuming
	// it, so the caller can check what it is bound to before spending it
	// with TakeOneTime. ErrNotFound if unknown, of another kind, taken, or
	// expired at now.
	GetOneTime(ctx context.Context, hash []byte, kind string, now time.Time) (OneTime, error)
	// TakeOneTime atomically removes and returns the value of that hash and
	// kind. Of concurrent callers exactly one gets it. ErrNotFound if
	// unknown, of another kind (the value is then left in place), or expired.
	TakeOneTime(ctx context.Context, hash []byte, kind string, now time.Time) (OneTime, error)
}

// Store is the token service's storage. Every backend implements all of it
// and passes storetest.Run.
type Store interface {
	Clients
	AuthCodes
	Grants
	AccessTokens
	Sessions
	BrowserCookies
	UpstreamTokens
	UpstreamLeases
	UpstreamClients
	OneTimes

	// DeleteExpired garbage-collects every record expired at now and returns
	// how many rows it removed. An expired session is kept while a grant of
	// it is still live (unrevoked and unexpired), so a refresh can recreate
	// it; a used refresh token is kept until it expires, for reuse detection.
	DeleteExpired(ctx context.Context, now time.Time) (int64, error)
	// Close releases the backend's resources.
	Close() error
}
