package oauth

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mcpmesh/gateway/tokensvc/secret"
	"github.com/mcpmesh/gateway/tokensvc/store"
)

// ValidateAccessToken returns the stored access token (External Token) for
// token if it is valid at the route routeID (a normalised route ID, as
// config.Route.Normalized().ID): known, unexpired, its grant and session not
// revoked, and either unbound (Resource empty: valid at every route), bound
// to routeID, or bound to routeID's origin where that origin means every route of the host
// (resource.go). Otherwise it returns an error
// wrapping ErrInvalidToken.
func (s *Server) ValidateAccessToken(ctx context.Context, token, routeID string) (store.AccessToken, error) {
	if token == "" {
		return store.AccessToken{}, ErrInvalidToken
	}
	t, err := s.store.GetAccessToken(ctx, secret.Hash(token), s.now())
	if errors.Is(err, store.ErrNotFound) {
		return store.AccessToken{}, ErrInvalidToken
	}
	if err != nil {
		return store.AccessToken{}, fmt.Errorf("validate access token: %w", err)
	}
	if IsServiceToken(t) && !s.isServiceClient(t.ClientID) {
		return store.AccessToken{}, fmt.Errorf("service token of a client no longer configured for client_credentials: %w", ErrInvalidToken)
	}
	if !s.tokenValidAt(t.Resource, routeID) || !s.clientMayUse(t.ClientID, routeID) {
		return store.AccessToken{}, fmt.Errorf("token bound to another resource: %w", ErrInvalidToken)
	}
	return t, nil
}

// originOf returns scheme://host[:port] of a normalised route ID.
func originOf(routeID string) string {
	scheme, rest, ok := strings.Cut(routeID, "://")
	if !ok {
		return ""
	}
	host, _, _ := strings.Cut(rest, "/")
	return scheme + "://" + host
}

// IssueClientToken issues an External Token for the browser session sess,
// for an mcp.client route's backend (docs/architecture.md, rule 5): not bound to a resource,
// without refresh, valid for the access token lifetime but never beyond the
// session's expiry. It is revoked with the session.
func (s *Server) IssueClientToken(ctx context.Context, sess store.Session) (string, time.Time, error) {
	now := s.now()
	if sess.ID == "" {
		return "", time.Time{}, errors.New("issue client token: session has no ID")
	}
	if !sess.RevokedAt.IsZero() || (!sess.ExpiresAt.IsZero() && !now.Before(sess.ExpiresAt)) {
		return "", time.Time{}, errors.New("issue client token: session expired or revoked")
	}
	tok, exp, oerr := s.createAccessToken(ctx, store.AccessToken{
		ClientID:  clientRouteClientID,
		SessionID: sess.ID,
		Subject:   sess.Subject,
	}, sess.ExpiresAt)
	if oerr != nil {
		return "", time.Time{}, fmt.Errorf("issue client token: %s", oerr.description)
	}
	s.events.ClientTokenIssued()
	return tok, exp, nil
}
