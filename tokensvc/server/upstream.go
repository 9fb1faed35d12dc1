package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mcpmesh/gateway/tokensvc/check"
	"github.com/mcpmesh/gateway/tokensvc/secret"
	"github.com/mcpmesh/gateway/tokensvc/store"
)

// ErrUpstreamRequired means the user has no usable Internal Token for the route: they must
// (re)connect through paths.Connect. It is check.ErrUpstreamRequired.
var ErrUpstreamRequired = check.ErrUpstreamRequired

// UpstreamTokens supplies Internal Tokens (TIs) to the check API (check.UpstreamTokens). The
// upstream OAuth package implements it with refresh; the default reads the store and never
// refreshes.
type UpstreamTokens = check.UpstreamTokens

// UpstreamSealPurpose returns the secret.Sealer purpose of the TI of routeID.
func UpstreamSealPurpose(routeID string) string { return "upstream:" + routeID }

// StoredUpstreamToken is the plaintext of store.UpstreamToken.Sealed: the JSON of the
// upstream provider's token, with the field names of golang.org/x/oauth2.Token.
type StoredUpstreamToken struct {
	AccessToken  string    `json:"access_token"`
	TokenType    string    `json:"token_type,omitempty"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
}

// storeUpstream is the default UpstreamTokens: the stored TI while it has not expired.
type storeUpstream struct {
	store  store.Store
	sealer *secret.Sealer
	now    func() time.Time
}

func (u *storeUpstream) Token(ctx context.Context, subject, routeID string) (string, time.Time, error) {
	rec, err := u.store.GetUpstreamToken(ctx, subject, routeID, u.now())
	if errors.Is(err, store.ErrNotFound) {
		return "", time.Time{}, ErrUpstreamRequired
	}
	if err != nil {
		return "", time.Time{}, fmt.Errorf("read upstream token: %w", err)
	}
	raw, err := u.sealer.Open(rec.Sealed, UpstreamSealPurpose(routeID))
	if err != nil {
		return "", time.Time{}, fmt.Errorf("%w: stored token cannot be opened", ErrUpstreamRequired)
	}
	var t StoredUpstreamToken
	if err := json.Unmarshal(raw, &t); err != nil || t.AccessToken == "" {
		return "", time.Time{}, fmt.Errorf("%w: stored token is malformed", ErrUpstreamRequired)
	}
	if !t.Expiry.IsZero() && !u.now().Before(t.Expiry) {
		return "", time.Time{}, fmt.Errorf("%w: token expired", ErrUpstreamRequired)
	}
	return t.AccessToken, t.Expiry, nil
}
