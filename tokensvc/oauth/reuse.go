package oauth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"time"
)

// Concurrent refreshes (docs/decisions.md, "Refresh token reuse interval").
//
// Real MCP clients refresh from several requests at once, each presenting the
// same refresh token. The first rotates it; within
// token_service.refresh_token_reuse_interval the others, from the same
// client, receive a new access token and the same successor refresh token, so
// the family keeps one live refresh token and the user stays signed in.
//
// The successor is not random: it is an HMAC of the presented token under a
// key derived from shared_secret. Every replica can recompute it from what the
// client presents, so nothing more is stored and a repeat can be answered by
// any replica; without the key, a presented token reveals nothing of its
// successor.

// successorKeyPurpose is the config.DeriveKey purpose of the successor key.
const successorKeyPurpose = "oauth/refresh-token-successor"

// retryAfterSeconds is the Retry-After of a temporarily_unavailable answer.
const retryAfterSeconds = "1"

// successorToken returns the refresh token that rotating raw issues.
func (s *Server) successorToken(raw string) string {
	m := hmac.New(sha256.New, s.successorKey)
	m.Write([]byte("refresh-successor:"))
	m.Write([]byte(raw))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// reuseGranted reports whether a refresh token rotated at usedAt may be
// presented again at now by the client it was issued to.
func (s *Server) reuseGranted(usedAt, now time.Time) bool {
	return s.reuseInterval > 0 && now.Sub(usedAt) <= s.reuseInterval
}

// unavailable is the answer to a failure of the store (or another dependency)
// at the token, revocation and registration endpoints: 503
// temporarily_unavailable with Retry-After. Never invalid_grant, which would
// make a client throw away tokens that are still good, and never a bare 500.
func unavailable(description string) *oauthError {
	return newError(errTemporarilyUnavailable, description)
}

// setRetryAfter adds Retry-After to a 503 answer.
func setRetryAfter(w http.ResponseWriter, e *oauthError) {
	if e.status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", retryAfterSeconds)
	}
}
