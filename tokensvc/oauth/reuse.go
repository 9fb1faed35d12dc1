package oauth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"sync"
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
// presented again at now by the client it was issued to, with reuse interval reuse.
func reuseGranted(reuse time.Duration, usedAt, now time.Time) bool {
	return reuse > 0 && now.Sub(usedAt) <= reuse
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

// A rotation whose store call failed may still have been committed (the connection lost
// during its COMMIT): the client got 503 and keeps the old refresh token, which the store
// now says was used at the time this server passed to the rotation. When the same client
// presents it again, however late, and the stored use is that rotation's, it is the retry
// of an answer this server never gave, not a reuse: it is granted the successor as within
// the reuse interval. Only the server (replica) whose rotation failed knows this; a retry
// reaching another replica past the interval still revokes the family.
const (
	unansweredFor = 10 * time.Minute // how long a failed rotation is remembered
	unansweredMax = 10000            // at most this many at once; more are not remembered
)

// unanswered remembers failed rotations: the presented token's hash and the rotation time.
type unanswered struct {
	mu sync.Mutex
	at map[string]time.Time
}

func (u *unanswered) add(hash []byte, at time.Time) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.at == nil {
		u.at = map[string]time.Time{}
	}
	if len(u.at) >= unansweredMax {
		for k, t := range u.at {
			if at.Sub(t) > unansweredFor {
				delete(u.at, k)
			}
		}
		if len(u.at) >= unansweredMax {
			return
		}
	}
	u.at[string(hash)] = at
}

// was reports whether the rotation of hash that the store recorded at usedAt is one this
// server remembers as failed (stores keep times to the microsecond or better).
func (u *unanswered) was(hash []byte, usedAt, now time.Time) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	at, ok := u.at[string(hash)]
	if ok && now.Sub(at) > unansweredFor {
		delete(u.at, string(hash))
		return false
	}
	d := at.Sub(usedAt)
	return ok && d < time.Millisecond && d > -time.Millisecond
}
