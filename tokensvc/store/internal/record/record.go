package record

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/mcpmesh/gateway/tokensvc/store"
)

// errEmpty is wrapped by every validation error.
var errEmpty = errors.New("must not be empty")

func empty(what string) error { return fmt.Errorf("store: %s %w", what, errEmpty) }

// Bytes returns a copy of b, nil if b is empty.
func Bytes(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return slices.Clone(b)
}

// Strings returns a copy of s, nil if s is empty.
func Strings(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return slices.Clone(s)
}

// Client validates c and returns its normalised copy.
func Client(c store.Client) (store.Client, error) {
	if c.ID == "" {
		return c, empty("client ID")
	}
	if c.Kind == "" {
		return c, empty("client kind")
	}
	return CopyClient(c), nil
}

// CopyClient returns a normalised deep copy of c.
func CopyClient(c store.Client) store.Client {
	c.SecretHash = Bytes(c.SecretHash)
	c.RedirectURIs = Strings(c.RedirectURIs)
	c.GrantTypes = Strings(c.GrantTypes)
	c.ResponseTypes = Strings(c.ResponseTypes)
	c.CreatedAt = store.Time(c.CreatedAt)
	c.ExpiresAt = store.Time(c.ExpiresAt)
	c.LastUsedAt = store.Time(c.LastUsedAt)
	return c
}

// AuthCode validates c and returns its normalised copy.
func AuthCode(c store.AuthCode) (store.AuthCode, error) {
	if len(c.Hash) == 0 {
		return c, empty("auth code hash")
	}
	if c.ClientID == "" {
		return c, empty("auth code client ID")
	}
	return CopyAuthCode(c), nil
}

// CopyAuthCode returns a normalised deep copy of c.
func CopyAuthCode(c store.AuthCode) store.AuthCode {
	c.Hash = Bytes(c.Hash)
	c.CreatedAt = store.Time(c.CreatedAt)
	c.ExpiresAt = store.Time(c.ExpiresAt)
	return c
}

// Grant validates g and returns its normalised copy.
func Grant(g store.Grant) (store.Grant, error) {
	if g.ID == "" {
		return g, empty("grant ID")
	}
	if g.ClientID == "" {
		return g, empty("grant client ID")
	}
	return CopyGrant(g), nil
}

// CopyGrant returns a normalised copy of g.
func CopyGrant(g store.Grant) store.Grant {
	g.CreatedAt = store.Time(g.CreatedAt)
	g.ExpiresAt = store.Time(g.ExpiresAt)
	g.RevokedAt = store.Time(g.RevokedAt)
	return g
}

// RefreshToken validates t, sets its grant ID and returns its normalised copy.
func RefreshToken(t store.RefreshToken, grantID string) (store.RefreshToken, error) {
	if len(t.Hash) == 0 {
		return t, empty("refresh token hash")
	}
	t.GrantID = grantID
	return CopyRefreshToken(t), nil
}

// CopyRefreshToken returns a normalised deep copy of t.
func CopyRefreshToken(t store.RefreshToken) store.RefreshToken {
	t.Hash = Bytes(t.Hash)
	t.CreatedAt = store.Time(t.CreatedAt)
	t.ExpiresAt = store.Time(t.ExpiresAt)
	t.UsedAt = store.Time(t.UsedAt)
	return t
}

// AccessToken validates t and returns its normalised copy.
func AccessToken(t store.AccessToken) (store.AccessToken, error) {
	if len(t.Hash) == 0 {
		return t, empty("access token hash")
	}
	return CopyAccessToken(t), nil
}

// CopyAccessToken returns a normalised deep copy of t.
func CopyAccessToken(t store.AccessToken) store.AccessToken {
	t.Hash = Bytes(t.Hash)
	t.CreatedAt = store.Time(t.CreatedAt)
	t.ExpiresAt = store.Time(t.ExpiresAt)
	return t
}

// Session validates s and returns its normalised copy.
func Session(s store.Session) (store.Session, error) {
	if s.ID == "" {
		return s, empty("session ID")
	}
	return CopySession(s), nil
}

// CopySession returns a normalised deep copy of s.
func CopySession(s store.Session) store.Session {
	s.Groups = Strings(s.Groups)
	s.Claims = Bytes(s.Claims)
	s.IDPTokens = Bytes(s.IDPTokens)
	s.IDPTokenExpiry = store.Time(s.IDPTokenExpiry)
	s.CreatedAt = store.Time(s.CreatedAt)
	s.ExpiresAt = store.Time(s.ExpiresAt)
	s.RevokedAt = store.Time(s.RevokedAt)
	return s
}

// BrowserCookie validates c and returns its normalised copy.
func BrowserCookie(c store.BrowserCookie) (store.BrowserCookie, error) {
	if len(c.Hash) == 0 {
		return c, empty("browser cookie hash")
	}
	if c.SessionID == "" {
		return c, empty("browser cookie session ID")
	}
	if c.Host == "" {
		return c, empty("browser cookie host")
	}
	return CopyBrowserCookie(c), nil
}

// CopyBrowserCookie returns a normalised deep copy of c.
func CopyBrowserCookie(c store.BrowserCookie) store.BrowserCookie {
	c.Hash = Bytes(c.Hash)
	c.CreatedAt = store.Time(c.CreatedAt)
	c.ExpiresAt = store.Time(c.ExpiresAt)
	return c
}

// UpstreamToken validates t and returns its normalised copy.
func UpstreamToken(t store.UpstreamToken) (store.UpstreamToken, error) {
	if t.Subject == "" {
		return t, empty("upstream token subject")
	}
	if t.RouteID == "" {
		return t, empty("upstream token route ID")
	}
	return CopyUpstreamToken(t), nil
}

// CopyUpstreamToken returns a normalised deep copy of t.
func CopyUpstreamToken(t store.UpstreamToken) store.UpstreamToken {
	t.Sealed = Bytes(t.Sealed)
	t.ExpiresAt = store.Time(t.ExpiresAt)
	t.UpdatedAt = store.Time(t.UpdatedAt)
	return t
}

// UpstreamClient validates c and returns its normalised copy.
func UpstreamClient(c store.UpstreamClient) (store.UpstreamClient, error) {
	if c.Issuer == "" {
		return c, empty("upstream client issuer")
	}
	if c.RedirectURI == "" {
		return c, empty("upstream client redirect URI")
	}
	return CopyUpstreamClient(c), nil
}

// CopyUpstreamClient returns a normalised deep copy of c.
func CopyUpstreamClient(c store.UpstreamClient) store.UpstreamClient {
	c.Sealed = Bytes(c.Sealed)
	c.ExpiresAt = store.Time(c.ExpiresAt)
	c.CreatedAt = store.Time(c.CreatedAt)
	return c
}

// OneTime validates v and returns its normalised copy.
func OneTime(v store.OneTime) (store.OneTime, error) {
	if len(v.Hash) == 0 {
		return v, empty("one-time value hash")
	}
	if v.Kind == "" {
		return v, empty("one-time value kind")
	}
	return CopyOneTime(v), nil
}

// CopyOneTime returns a normalised deep copy of v.
func CopyOneTime(v store.OneTime) store.OneTime {
	v.Hash = Bytes(v.Hash)
	v.Payload = Bytes(v.Payload)
	v.ExpiresAt = store.Time(v.ExpiresAt)
	return v
}

// Live reports whether a record expiring at expiresAt is live at now; a zero
// expiresAt means never expires only where never is allowed (neverOK).
func Live(expiresAt, now time.Time, neverOK bool) bool {
	if expiresAt.IsZero() {
		return neverOK
	}
	return store.Time(now).Before(expiresAt)
}
