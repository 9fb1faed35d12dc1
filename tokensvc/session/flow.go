// Helpers shared by the sign-in steps (signin.go, authenticate.go, handoff.go, signout.go):
// one-time values, browser binding, and the answers of the flow.

package session

import (
	"context"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/mcpmesh/gateway/tokensvc/secret"
	"github.com/mcpmesh/gateway/tokensvc/store"
)

func (m *Manager) putOneTime(ctx context.Context, value, kind string, payload any, ttl time.Duration) error {
	raw, err := json.Marshal(payload)
	if err != nil {
		return fmt.Errorf("encode %s: %w", kind, err)
	}
	return m.store.PutOneTime(ctx, store.OneTime{Hash: secret.Hash(value), Kind: kind, Payload: raw, ExpiresAt: m.now().Add(ttl)})
}

// peekOneTime decodes the payload of value of kind into v without spending it.
func (m *Manager) peekOneTime(ctx context.Context, value, kind string, v any) error {
	if !plausibleToken(value) {
		return store.ErrNotFound
	}
	one, err := m.store.GetOneTime(ctx, secret.Hash(value), kind, m.now())
	if err != nil {
		return err
	}
	if err := json.Unmarshal(one.Payload, v); err != nil {
		return fmt.Errorf("decode %s: %w", kind, err)
	}
	return nil
}

// sameBrowser reports whether r carries cookie name whose hash is want.
func sameBrowser(r *http.Request, name, want string) bool {
	v := cookieValue(r, name)
	return v != "" && subtle.ConstantTimeCompare([]byte(hashString(v)), []byte(want)) == 1
}

func hashString(v string) string { return base64.RawURLEncoding.EncodeToString(secret.Hash(v)) }

// flowError answers a failed one-time lookup: 400 with message when it is unknown, expired
// or spent, 503 otherwise (internalError).
func (m *Manager) flowError(w http.ResponseWriter, r *http.Request, err error, message string) {
	if errors.Is(err, store.ErrNotFound) {
		renderError(w, r, http.StatusBadRequest, message)
		return
	}
	m.internalError(w, r, "sign-in flow", err)
}

// internalError answers a failure of the service's own dependencies — in practice its store
// unreachable (a database restart, a dropped connection): 503 with Retry-After and a page
// naming the request ID, so that the user tries again rather than giving up; never the error.
func (m *Manager) internalError(w http.ResponseWriter, r *http.Request, what string, err error) {
	m.log.ErrorContext(r.Context(), what, "error", err.Error())
	w.Header().Set("Retry-After", "1")
	renderError(w, r, http.StatusServiceUnavailable, "Something went wrong on our side. Try again in a moment.")
}

func redirect(w http.ResponseWriter, location string) {
	w.Header().Set("Location", location)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusSeeOther)
}
