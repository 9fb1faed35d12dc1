package main

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
)

// csrfKey makes the tool form's CSRF token: an HMAC of the signed-in user's subject under a
// key drawn when the app starts. Another site cannot read it from the page, and a token
// shown to one user is worth nothing for another. It does not expire: restarting the app
// draws a new key.
type csrfKey []byte

func newCSRFKey() (csrfKey, error) {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		return nil, fmt.Errorf("CSRF key: %w", err)
	}
	return k, nil
}

func (k csrfKey) token(subject string) string {
	m := hmac.New(sha256.New, k)
	m.Write([]byte("demoapp tool form\x00"))
	m.Write([]byte(subject))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// checkCSRF refuses a form post that another site sent: a Sec-Fetch-Site other than
// same-origin, an Origin other than the app's (an opaque "null" included), or a form token
// that is not this user's.
func (a *app) checkCSRF(r *http.Request, subject string) error {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
		return fmt.Errorf("the form was sent from another site (Sec-Fetch-Site: %s)", site)
	}
	if o := r.Header.Get("Origin"); o != "" && o != a.origin() {
		return errors.New("the form was sent from another origin")
	}
	got := r.PostForm.Get("csrf")
	if got == "" || !hmac.Equal([]byte(got), []byte(a.csrf.token(subject))) {
		return errors.New("the form's CSRF token is missing or not yours; reload the page")
	}
	return nil
}
