// Package secret makes and protects the token service's secrets: opaque random tokens, their
// SHA-256 hashes (the only form the store keeps) and sealing of stored secrets (IDP tokens,
// Internal Tokens) with XChaCha20-Poly1305 under a key derived from shared_secret.
package secret

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"

	"golang.org/x/crypto/chacha20poly1305"
)

// NewToken returns a fresh opaque token: 32 random bytes, base64url without padding.
func NewToken() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic("secret: crypto/rand failed: " + err.Error()) // crypto/rand never fails on supported platforms
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// Hash returns the SHA-256 of token, the form in which tokens are stored and looked up.
func Hash(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// Equal compares two secrets in constant time.
func Equal(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// ErrUnseal means a sealed value was tampered with, or sealed under another key or for
// another purpose.
var ErrUnseal = errors.New("secret: cannot unseal value")

// Sealer seals and opens secrets at rest.
type Sealer struct {
	key []byte
}

// NewSealer returns a Sealer for a 32-byte key.
func NewSealer(key []byte) (*Sealer, error) {
	if len(key) != chacha20poly1305.KeySize {
		return nil, fmt.Errorf("secret: sealing key must be %d bytes, got %d", chacha20poly1305.KeySize, len(key))
	}
	return &Sealer{key: append([]byte(nil), key...)}, nil
}

// Seal encrypts plaintext; purpose (for example "idp-tokens" or a route ID) is authenticated
// but not stored, so a value sealed for one purpose cannot be opened for another.
func (s *Sealer) Seal(plaintext []byte, purpose string) []byte {
	aead, _ := chacha20poly1305.NewX(s.key)
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plaintext)+aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		panic("secret: crypto/rand failed: " + err.Error())
	}
	return aead.Seal(nonce, nonce, plaintext, []byte(purpose))
}

// Open decrypts a value made by Seal with the same purpose.
func (s *Sealer) Open(sealed []byte, purpose string) ([]byte, error) {
	aead, _ := chacha20poly1305.NewX(s.key)
	if len(sealed) < aead.NonceSize()+aead.Overhead() {
		return nil, ErrUnseal
	}
	nonce, ct := sealed[:aead.NonceSize()], sealed[aead.NonceSize():]
	pt, err := aead.Open(nil, nonce, ct, []byte(purpose))
	if err != nil {
		return nil, ErrUnseal
	}
	return pt, nil
}
