package session

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Sign-in state before the provider has signed the user in lives in the browser, never in
// the store: an anonymous request must not be able to write rows. The route host's sign-in
// request and the provider's state parameter are sealed (secret.Sealer: encrypted and
// authenticated under a key derived from shared_secret, bound to their purpose) and carry
// their own expiry. What binds them to one browser is a cookie of that browser:
//
//   - signInRequest.Browser is the hash of the route host's SignInCookie;
//   - idpState.Browser is the hash of the authenticate host's FlowCookie, and the OIDC
//     nonce and the PKCE verifier are derived (HMAC) from that cookie's value and the
//     state's random Flow ID, so they exist nowhere but in this browser's cookie and the
//     service's key, and never travel through the front channel.
//
// Why this is as strong as the stored one-time states it replaces:
//
//   - Forgery: a state cannot be made or altered without the key; one sealed for one step
//     does not open at the other; it expires 10 minutes after it was sealed.
//   - Login CSRF: a callback whose state was not sealed for this browser's flow cookie is
//     refused, as before. The refusal spends nothing, so a foreign attempt cannot burn a
//     sign-in in progress.
//   - Replay of a used provider state: a sealed value cannot be spent in the browser, and
//     the flow cookie is shared by the browser's tabs, so clearing it would break a sign-in
//     in another tab. Instead: the state works only with this browser's cookie; the code
//     the provider issued for it is single use and redeemable only with the PKCE verifier
//     derived from that cookie; and once a code was redeemed, the flow ID is marked used in
//     the store (a write that needs a successful sign-in at the provider, never an
//     anonymous one) and a second completion is refused, even at a provider that lets a
//     code be redeemed twice, and of racing ones exactly one completes.
//   - Replay of a route host's state: it is no longer single use, but all it can produce is
//     a hand-over code bound to the pre-session nonce of the browser that started it, which
//     no other browser holds.

// Seal purposes of the sign-in state (a value sealed for one cannot be opened as the other).
const (
	sealPurposeSignInState = "signin-state/v2"
	sealPurposeIDPState    = "idp-state/v2"
)

// maxStateLen bounds a sealed state in a URL or form before it is decoded. The largest
// legitimate one carries a return_to of maxReturnTo bytes, each of which JSON may escape
// into six.
const maxStateLen = 48 << 10

// errBadState means a sealed state is malformed, forged, sealed for another purpose, or
// expired.
var errBadState = errors.New("session: sign-in state is invalid or expired")

// sealedState is the envelope of a sealed state: its expiry and its payload.
type sealedState struct {
	Expires int64           `json:"exp"` // unix seconds
	Value   json.RawMessage `json:"v"`
}

// sealState seals v for purpose, valid for ttl, as a URL-safe string.
func (m *Manager) sealState(purpose string, v any, ttl time.Duration) (string, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("encode %s: %w", purpose, err)
	}
	env, err := json.Marshal(sealedState{Expires: m.now().Add(ttl).Unix(), Value: raw})
	if err != nil {
		return "", fmt.Errorf("encode %s: %w", purpose, err)
	}
	return base64.RawURLEncoding.EncodeToString(m.sealer.Seal(env, purpose)), nil
}

// openState opens a value made by sealState for purpose into v. Every failure, expiry
// included, is errBadState.
func (m *Manager) openState(purpose, s string, v any) error {
	if s == "" || len(s) > maxStateLen {
		return errBadState
	}
	sealed, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return errBadState
	}
	raw, err := m.sealer.Open(sealed, purpose)
	if err != nil {
		return errBadState
	}
	var env sealedState
	if err := json.Unmarshal(raw, &env); err != nil || !m.now().Before(time.Unix(env.Expires, 0)) {
		return errBadState
	}
	if err := json.Unmarshal(env.Value, v); err != nil {
		return errBadState
	}
	return nil
}

// flowSecret derives a per-sign-in secret (label "nonce" or "pkce") from the browser's flow
// cookie and the state's flow ID: base64url of HMAC-SHA256, 43 characters (a valid PKCE
// verifier, RFC 7636 §4.1).
func (m *Manager) flowSecret(label, flowCookie, flowID string) string {
	mac := hmac.New(sha256.New, m.flowKey)
	mac.Write([]byte(label))
	mac.Write([]byte{0})
	mac.Write([]byte(flowCookie))
	mac.Write([]byte{0})
	mac.Write([]byte(flowID))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}
