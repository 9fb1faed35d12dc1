package assertion

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/mcpmesh/gateway/shared/config"
)

// MaxLifetime bounds the lifetime of an assertion.
const MaxLifetime = 5 * time.Minute

// KeyPurpose is the config.DeriveKey purpose of the signing key's seed.
const KeyPurpose = "assertion-signing-key"

// scalarInfo is the HKDF info of the scalar derivation from the seed.
const scalarInfo = "mcp-gateway/assertion-signing-key/p256-scalar"

// Identity is the user an assertion speaks for.
type Identity struct {
	Subject string
	Email   string
	Name    string
	Groups  []string
}

// Signer signs assertions. It is safe for concurrent use.
type Signer struct {
	issuer string
	key    *ecdsa.PrivateKey
	kid    string
	signer jose.Signer
	jwks   []byte
	now    func() time.Time
}

// Option configures a Signer.
type Option func(*Signer)

// WithClock sets the clock (default time.Now).
func WithClock(now func() time.Time) Option { return func(s *Signer) { s.now = now } }

// New returns the Signer of cfg: issuer authenticate_service_url, key derived from
// shared_secret.
func New(cfg *config.Config, opts ...Option) (*Signer, error) {
	return NewFromSeed(cfg.DeriveKey(KeyPurpose), cfg.AuthenticateServiceURL, opts...)
}

// NewFromSeed returns a Signer whose key is derived from seed (at least 32 bytes) as the
// package documentation describes.
func NewFromSeed(seed []byte, issuer string, opts ...Option) (*Signer, error) {
	if len(seed) < 32 {
		return nil, errors.New("assertion: seed must be at least 32 bytes")
	}
	if issuer == "" {
		return nil, errors.New("assertion: issuer is required")
	}
	key, err := deriveKey(seed)
	if err != nil {
		return nil, err
	}
	jwk := jose.JSONWebKey{Key: &key.PublicKey, Algorithm: string(jose.ES256), Use: "sig"}
	tp, err := jwk.Thumbprint(crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("assertion: key thumbprint: %w", err)
	}
	jwk.KeyID = base64.RawURLEncoding.EncodeToString(tp)
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader(jose.HeaderKey("kid"), jwk.KeyID))
	if err != nil {
		return nil, fmt.Errorf("assertion: signer: %w", err)
	}
	jwks, err := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{jwk}})
	if err != nil {
		return nil, fmt.Errorf("assertion: encode JWKS: %w", err)
	}
	s := &Signer{issuer: issuer, key: key, kid: jwk.KeyID, signer: signer, jwks: jwks, now: time.Now}
	for _, o := range opts {
		o(s)
	}
	return s, nil
}

// deriveKey maps seed to a P-256 private key: d = (c mod (n−1)) + 1 with c a 320-bit HKDF
// output.
func deriveKey(seed []byte) (*ecdsa.PrivateKey, error) {
	curve := elliptic.P256()
	n := curve.Params().N
	material, err := hkdf.Key(sha256.New, seed, nil, scalarInfo, (n.BitLen()+64)/8)
	if err != nil {
		return nil, fmt.Errorf("assertion: derive key: %w", err)
	}
	nMinus1 := new(big.Int).Sub(n, big.NewInt(1))
	d := new(big.Int).SetBytes(material)
	d.Mod(d, nMinus1).Add(d, big.NewInt(1))
	raw := make([]byte, (n.BitLen()+7)/8)
	d.FillBytes(raw)
	key, err := ecdsa.ParseRawPrivateKey(curve, raw)
	if err != nil {
		return nil, fmt.Errorf("assertion: derive key: %w", err)
	}
	return key, nil
}

// claims is the assertion payload. email, name and groups are always present.
type claims struct {
	Issuer    string   `json:"iss"`
	Audience  string   `json:"aud"`
	Subject   string   `json:"sub"`
	Email     string   `json:"email"`
	Name      string   `json:"name"`
	Groups    []string `json:"groups"`
	IssuedAt  int64    `json:"iat"`
	ExpiresAt int64    `json:"exp"`
	ID        string   `json:"jti"`
}

// Sign returns an assertion for id, addressed to audience (the receiving host), and its
// expiry: now + the lifetime, but never after notAfter (the expiry of the credential it is
// derived from; zero means no bound). It fails if that leaves no lifetime.
func (s *Signer) Sign(audience string, id Identity, notAfter time.Time) (string, time.Time, error) {
	if audience == "" || id.Subject == "" {
		return "", time.Time{}, errors.New("assertion: audience and subject are required")
	}
	now := s.now()
	exp := now.Add(MaxLifetime).Truncate(time.Second)
	if !notAfter.IsZero() && notAfter.Before(exp) {
		exp = notAfter.Truncate(time.Second)
	}
	iat := now.Truncate(time.Second)
	if !exp.After(iat) {
		return "", time.Time{}, errors.New("assertion: the credential expires too soon to sign for it")
	}
	groups := id.Groups
	if groups == nil {
		groups = []string{}
	}
	payload, err := json.Marshal(claims{
		Issuer: s.issuer, Audience: audience, Subject: id.Subject, Email: id.Email, Name: id.Name,
		Groups: groups, IssuedAt: iat.Unix(), ExpiresAt: exp.Unix(), ID: rand.Text(),
	})
	if err != nil {
		return "", time.Time{}, fmt.Errorf("assertion: encode claims: %w", err)
	}
	jws, err := s.signer.Sign(payload)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("assertion: sign: %w", err)
	}
	out, err := jws.CompactSerialize()
	if err != nil {
		return "", time.Time{}, fmt.Errorf("assertion: serialize: %w", err)
	}
	return out, exp, nil
}

// Issuer returns the iss claim of the assertions.
func (s *Signer) Issuer() string { return s.issuer }

// KeyID returns the kid of the signing key (its RFC 7638 SHA-256 thumbprint).
func (s *Signer) KeyID() string { return s.kid }

// PublicKey returns the verification key.
func (s *Signer) PublicKey() *ecdsa.PublicKey { return &s.key.PublicKey }

// JWKS returns the published key set (public keys only).
func (s *Signer) JWKS() jose.JSONWebKeySet {
	var set jose.JSONWebKeySet
	_ = json.Unmarshal(s.jwks, &set)
	return set
}

// JWKSCacheControl is the Cache-Control of the JWKS response.
const JWKSCacheControl = "public, max-age=3600"

// ServeHTTP serves the JWKS. The caller routes GET and HEAD to it (tokensvc/server).
func (s *Signer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", JWKSCacheControl)
	h.Set("Access-Control-Allow-Origin", "*")
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(s.jwks)
}
