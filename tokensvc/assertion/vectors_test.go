package assertion

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

var update = flag.Bool("update", false, "rewrite sdk/testdata/vectors.json with this package's signer")

// vectorsPath is the shared test vectors of the assertion SDKs (sdk/go, sdk/python).
var vectorsPath = filepath.Join("..", "..", "sdk", "testdata", "vectors.json")

// The vectors' fixed inputs: verification happens at vectorNow with vectorLeeway.
var (
	vectorSeed     = bytes.Repeat([]byte{0x5a}, 32)
	vectorNow      = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	vectorIssuer   = "https://auth.example.com"
	vectorAudience = "mcp.example.com"
	vectorLeeway   = 30 * time.Second
	vectorIdentity = Identity{Subject: "alice", Email: "alice@example.com", Name: "Alice Liddell", Groups: []string{"admins", "staff"}}
)

// vectorFile is the format of sdk/testdata/vectors.json.
type vectorFile struct {
	Comment       string          `json:"comment"`
	Issuer        string          `json:"issuer"`
	Audience      string          `json:"audience"`
	Now           int64           `json:"now"`
	LeewaySeconds int             `json:"leeway_seconds"`
	JWKS          json.RawMessage `json:"jwks"`
	Cases         []vectorCase    `json:"cases"`
}

// vectorCase is one assertion and its expected outcome: Valid with the listed claims, or
// refused for Reason (the reason names of sdk/go/assertion).
type vectorCase struct {
	Name   string         `json:"name"`
	Token  string         `json:"token"`
	Valid  bool           `json:"valid"`
	Reason string         `json:"reason,omitempty"`
	Claims map[string]any `json:"claims,omitempty"`
}

// TestVectors_UpdateOrCheck writes the vectors with -update; otherwise it checks that the
// committed file is this signer's: its JWKS is the one derived from vectorSeed and its valid
// assertions verify with that key.
func TestVectors_UpdateOrCheck(t *testing.T) {
	if *update {
		doc, err := json.MarshalIndent(makeVectors(t), "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(vectorsPath, append(doc, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	raw, err := os.ReadFile(vectorsPath)
	if err != nil {
		t.Fatalf("%v (run go test ./tokensvc/assertion -run TestVectors -update)", err)
	}
	var got vectorFile
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	s := vectorSigner(t, vectorIssuer, vectorNow)
	if !bytes.Equal(compactJSON(t, got.JWKS), s.jwks) || got.Issuer != vectorIssuer || got.Audience != vectorAudience || got.Now != vectorNow.Unix() {
		t.Fatalf("%s is not the current signer's (JWKS %s, want %s); regenerate it with -update", vectorsPath, got.JWKS, s.jwks)
	}
	names := map[string]bool{}
	for _, c := range got.Cases {
		names[c.Name] = true
		if !c.Valid {
			continue
		}
		tok, err := jwt.ParseSigned(c.Token, []jose.SignatureAlgorithm{jose.ES256})
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		var claims jwt.Claims
		if err := tok.Claims(s.PublicKey(), &claims); err != nil {
			t.Errorf("%s: does not verify with the signer's key: %v", c.Name, err)
		}
	}
	for _, c := range makeVectors(t).Cases {
		if !names[c.Name] {
			t.Errorf("case %q is missing from %s; regenerate it with -update", c.Name, vectorsPath)
		}
	}
}

func compactJSON(t *testing.T, raw []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func vectorSigner(t *testing.T, issuer string, at time.Time) *Signer {
	t.Helper()
	s, err := NewFromSeed(vectorSeed, issuer, WithClock(func() time.Time { return at }))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func makeVectors(t *testing.T) vectorFile {
	t.Helper()
	s := vectorSigner(t, vectorIssuer, vectorNow.Add(-time.Minute))
	sign := func(s *Signer, aud string) string {
		t.Helper()
		tok, _, err := s.Sign(aud, vectorIdentity, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	valid := sign(s, vectorAudience)
	parts := strings.Split(valid, ".")
	var payload map[string]any
	if err := json.Unmarshal(mustB64(t, parts[1]), &payload); err != nil {
		t.Fatal(err)
	}
	b64 := base64.RawURLEncoding.EncodeToString
	// raw signs header and claims (JSON texts, as given) with the signer's key.
	raw := func(header string, claims map[string]any) string {
		t.Helper()
		body, err := json.Marshal(claims)
		if err != nil {
			t.Fatal(err)
		}
		input := b64([]byte(header)) + "." + b64(body)
		h := sha256.Sum256([]byte(input))
		r, sv, err := ecdsa.Sign(rand.Reader, s.key, h[:])
		if err != nil {
			t.Fatal(err)
		}
		sig := make([]byte, 64)
		r.FillBytes(sig[:32])
		sv.FillBytes(sig[32:])
		return input + "." + b64(sig)
	}
	with := func(k string, v any) map[string]any {
		c := map[string]any{}
		for name, val := range payload {
			c[name] = val
		}
		c[k] = v
		return c
	}
	hdr := func(alg string) string {
		return `{"alg":"` + alg + `","kid":"` + s.kid + `","typ":"JWT"}`
	}

	spki, err := x509.MarshalPKIXPublicKey(s.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: spki})
	hsInput := b64([]byte(hdr("HS256"))) + "." + parts[1]
	mac := hmac.New(sha256.New, pubPEM)
	mac.Write([]byte(hsInput))

	// The last character of a 64-byte signature carries 2 bits; changing its 4 unused bits
	// leaves the bytes alone, so only a decoder that insists on the canonical form refuses it.
	sigChars := []byte(parts[2])
	last := strings.IndexByte(b64Alphabet, sigChars[len(sigChars)-1])
	sigChars[len(sigChars)-1] = b64Alphabet[last|0x0f]
	if last|0x0f == last {
		sigChars[len(sigChars)-1] = b64Alphabet[last&^0x0f]
	}
	badSig := mustB64(t, parts[2])
	badSig[10] ^= 0x01
	tampered := with("email", "mallory@example.com")
	tamperedBody, _ := json.Marshal(tampered)

	other, err := NewFromSeed(bytes.Repeat([]byte{0x33}, 32), vectorIssuer, WithClock(func() time.Time { return vectorNow }))
	if err != nil {
		t.Fatal(err)
	}
	validClaims := map[string]any{
		"iss": vectorIssuer, "aud": vectorAudience, "sub": vectorIdentity.Subject, "email": vectorIdentity.Email,
		"name": vectorIdentity.Name, "groups": []any{"admins", "staff"},
		"iat": vectorNow.Add(-time.Minute).Unix(), "exp": vectorNow.Add(-time.Minute + MaxLifetime).Unix(),
	}
	leewayClaims := map[string]any{}
	for k, v := range validClaims {
		leewayClaims[k] = v
	}
	leewayAt := vectorNow.Add(-MaxLifetime - 10*time.Second)
	leewayClaims["iat"], leewayClaims["exp"] = leewayAt.Unix(), leewayAt.Add(MaxLifetime).Unix()

	cases := []vectorCase{
		{Name: "valid", Token: valid, Valid: true, Claims: validClaims},
		{Name: "valid_expired_within_leeway", Token: sign(vectorSigner(t, vectorIssuer, leewayAt), vectorAudience), Valid: true, Claims: leewayClaims},
		{Name: "alg_none", Token: b64([]byte(hdr("none"))) + "." + parts[1] + ".", Reason: "alg"},
		{Name: "hs256_signed_with_public_key", Token: hsInput + "." + b64(mac.Sum(nil)), Reason: "alg"},
		{Name: "wrong_audience", Token: sign(s, "other.example.com"), Reason: "audience"},
		{Name: "wrong_issuer", Token: sign(vectorSigner(t, "https://evil.example.com", vectorNow), vectorAudience), Reason: "issuer"},
		{Name: "expired", Token: sign(vectorSigner(t, vectorIssuer, vectorNow.Add(-10*time.Minute)), vectorAudience), Reason: "expired"},
		{Name: "iat_in_future", Token: sign(vectorSigner(t, vectorIssuer, vectorNow.Add(10*time.Minute)), vectorAudience), Reason: "not_yet_valid"},
		{Name: "nbf_in_future", Token: raw(hdr("ES256"), with("nbf", vectorNow.Add(10*time.Minute).Unix())), Reason: "not_yet_valid"},
		{Name: "unknown_kid", Token: sign(other, vectorAudience), Reason: "unknown_kid"},
		{Name: "missing_kid", Token: raw(`{"alg":"ES256","typ":"JWT"}`, payload), Reason: "header"},
		{Name: "duplicated_header_member", Token: raw(`{"alg":"ES256","kid":"`+s.kid+`","alg":"ES256","typ":"JWT"}`, payload), Reason: "header"},
		{Name: "bad_signature", Token: parts[0] + "." + parts[1] + "." + b64(badSig), Reason: "signature"},
		{Name: "signature_not_canonical_base64url", Token: parts[0] + "." + parts[1] + "." + string(sigChars), Reason: "malformed"},
		{Name: "duplicated_payload_member", Token: dupPayload(t, s, hdr("ES256"), parts[1]), Reason: "malformed"},
		{Name: "tampered_payload", Token: parts[0] + "." + b64(tamperedBody) + "." + parts[2], Reason: "signature"},
		{Name: "oversized", Token: raw(hdr("ES256"), with("padding", strings.Repeat("x", 9000))), Reason: "oversized"},
		{Name: "malformed_two_segments", Token: parts[0] + "." + parts[1], Reason: "malformed"},
		{Name: "empty", Token: "", Reason: "missing"},
	}
	return vectorFile{
		Comment: "Generated by go test ./tokensvc/assertion -run TestVectors -update (the token service's signer). " +
			"Verify each token at 'now' (Unix seconds) with 'leeway_seconds', issuer and audience, against 'jwks'.",
		Issuer: vectorIssuer, Audience: vectorAudience, Now: vectorNow.Unix(), LeewaySeconds: int(vectorLeeway / time.Second),
		JWKS: s.jwks, Cases: cases,
	}
}

const b64Alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// dupPayload signs the payload of the valid assertion with its "email" member written twice
// (the second one a different address).
func dupPayload(t *testing.T, s *Signer, header, payloadSeg string) string {
	t.Helper()
	body := string(mustB64(t, payloadSeg))
	body = strings.Replace(body, `"email":"alice@example.com"`, `"email":"alice@example.com","email":"mallory@example.com"`, 1)
	if !strings.Contains(body, "mallory") {
		t.Fatal("no email member to duplicate")
	}
	b64 := base64.RawURLEncoding.EncodeToString
	input := b64([]byte(header)) + "." + b64([]byte(body))
	h := sha256.Sum256([]byte(input))
	r, sv, err := ecdsa.Sign(rand.Reader, s.key, h[:])
	if err != nil {
		t.Fatal(err)
	}
	sig := make([]byte, 64)
	r.FillBytes(sig[:32])
	sv.FillBytes(sig[32:])
	return input + "." + b64(sig)
}

func mustB64(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
