package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/mcpmesh/gateway/tokensvc/hosts"
	"github.com/mcpmesh/gateway/tokensvc/secret"
	"github.com/mcpmesh/gateway/tokensvc/store"
)

// handleRevoke is RFC 7009 token revocation. The client authenticates as at
// the token endpoint. Revoking a refresh token revokes its grant (every
// refresh and access token of the family); revoking an access token deletes
// it. Unknown tokens, and tokens of other clients (left untouched), are
// answered 200 like successful revocations, so the endpoint reveals nothing.
func (s *Server) handleRevoke(w http.ResponseWriter, r *http.Request, _ *hosts.Host) {
	form, client, ok := s.clientPost(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	tok := form.Get("token")
	if tok == "" {
		writeOAuthError(w, newError(errInvalidRequest, "token is required"))
		return
	}
	hash := secret.Hash(tok)
	try := []func(context.Context, []byte, string) (bool, error){s.revokeRefresh, s.revokeAccess}
	if form.Get("token_type_hint") == "access_token" {
		try[0], try[1] = try[1], try[0]
	}
	for _, f := range try {
		found, err := f(ctx, hash, client.ID)
		if err != nil {
			s.log.ErrorContext(ctx, "oauth: revoke", "client_id", client.ID, "error", err)
			writeOAuthError(w, unavailable("the token could not be revoked"))
			return
		}
		if found {
			break
		}
	}
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
}

// revokeRefresh revokes the grant of a refresh token of clientID. It
// reports whether the hash is a refresh token at all.
func (s *Server) revokeRefresh(ctx context.Context, hash []byte, clientID string) (bool, error) {
	_, grant, err := s.store.GetRefreshToken(ctx, hash, s.now())
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("get refresh token: %w", err)
	}
	if grant.ClientID != clientID {
		s.log.WarnContext(ctx, "oauth: revocation of another client's refresh token ignored", "client_id", clientID)
		return true, nil
	}
	if err := s.store.RevokeGrant(ctx, grant.ID, s.now()); err != nil && !errors.Is(err, store.ErrNotFound) {
		return true, fmt.Errorf("revoke grant: %w", err)
	}
	s.log.InfoContext(ctx, "oauth: grant revoked by client", "client_id", clientID, "grant_id", grant.ID)
	return true, nil
}

// revokeAccess deletes an access token of clientID. It reports whether the
// hash is an access token at all.
func (s *Server) revokeAccess(ctx context.Context, hash []byte, clientID string) (bool, error) {
	t, err := s.store.GetAccessToken(ctx, hash, s.now())
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("get access token: %w", err)
	}
	if t.ClientID != clientID {
		s.log.WarnContext(ctx, "oauth: revocation of another client's access token ignored", "client_id", clientID)
		return true, nil
	}
	if err := s.store.DeleteAccessToken(ctx, hash); err != nil && !errors.Is(err, store.ErrNotFound) {
		return true, fmt.Errorf("delete access token: %w", err)
	}
	return true, nil
}
