package assertion

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/mcpmesh/gateway/shared/config"
)

const issuer = "https://auth.example.com"

func seed(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }

// verify checks token against the JWKS document served by h and returns its claims.
func verify(t *testing.T, h http.Handler, token string) (map[string]any, jose.Header) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/.well-known/gateway/jwks.json", nil))
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(rec.Body.Bytes(), &set); err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		t.Fatal(err)
	}
	hdr := tok.Headers[0]
	keys := set.Key(hdr.KeyID)
	if len(keys) != 1 {
		t.Fatalf("kid %q: %d keys in JWKS", hdr.KeyID, len(keys))
	}
	var c map[string]any
	if err := tok.Claims(keys[0].Key, &c); err != nil {
		t.Fatalf("verify: %v", err)
	}
	return c, hdr
}

func TestSigner_ReplicasFromOneSecretShareTheKey(t *testing.T) {
	t.Parallel()
	cfg := &config.Config{SharedSecret: base64.StdEncoding.EncodeToString(seed(7)), AuthenticateServiceURL: issuer}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.jwks, b.jwks) || a.KeyID() != b.KeyID() {
		t.Fatal("two signers from one shared_secret publish different JWKS")
	}
	tok, _, err := a.Sign("mcp.example.com", Identity{Subject: "alice"}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if c, _ := verify(t, b, tok); c["sub"] != "alice" {
		t.Errorf("sub = %v", c["sub"])
	}
	other, err := New(&config.Config{SharedSecret: base64.StdEncoding.EncodeToString(seed(8)), AuthenticateServiceURL: issuer})
	if err != nil {
		t.Fatal(err)
	}
	if other.KeyID() == a.KeyID() {
		t.Error("different secrets gave the same key")
	}
}

// The derivation is part of the wire contract between replicas of different versions: a
// change of it must be deliberate. The pinned kid was computed independently (Python,
// `cryptography`: HKDF-SHA256, d = c mod (n−1) + 1, RFC 7638 thumbprint).
func TestSigner_DerivationIsPinned(t *testing.T) {
	t.Parallel()
	s, err := NewFromSeed(seed(1), issuer)
	if err != nil {
		t.Fatal(err)
	}
	const want = "ycIFBuCp0dnKycOxG5MgwuXRPzXJgmDSbBJ9hMcJHs0"
	if s.KeyID() != want {
		t.Errorf("kid for seed 0x01×32 = %q, want %q", s.KeyID(), want)
	}
}

func TestSigner_AssertionClaimsAndHeader(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_700_000_000, 0)
	s, err := NewFromSeed(seed(2), issuer, WithClock(func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	id := Identity{Subject: "alice", Email: "alice@example.com", Name: "Alice", Groups: []string{"eng", "ops"}}
	tok, exp, err := s.Sign("mcp.example.com", id, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	c, hdr := verify(t, s, tok)
	if hdr.Algorithm != "ES256" || hdr.KeyID != s.KeyID() || hdr.ExtraHeaders["typ"] != "JWT" {
		t.Errorf("header = %+v", hdr)
	}
	want := map[string]any{"iss": issuer, "aud": "mcp.example.com", "sub": "alice", "email": "alice@example.com", "name": "Alice", "iat": float64(now.Unix()), "exp": float64(now.Add(MaxLifetime).Unix())}
	for k, v := range want {
		if c[k] != v {
			t.Errorf("%s = %v, want %v", k, c[k], v)
		}
	}
	if g, _ := c["groups"].([]any); len(g) != 2 || g[0] != "eng" || g[1] != "ops" {
		t.Errorf("groups = %v", c["groups"])
	}
	if jti, _ := c["jti"].(string); jti == "" {
		t.Error("no jti")
	}
	if !exp.Equal(now.Add(MaxLifetime)) {
		t.Errorf("exp = %v", exp)
	}
	var std jwt.Claims
	parsed, _ := jwt.ParseSigned(tok, []jose.SignatureAlgorithm{jose.ES256})
	_ = parsed.Claims(s.PublicKey(), &std)
	if err := std.ValidateWithLeeway(jwt.Expected{Issuer: issuer, AnyAudience: jwt.Audience{"mcp.example.com"}, Time: now}, 0); err != nil {
		t.Errorf("standard validation: %v", err)
	}
	if err := std.ValidateWithLeeway(jwt.Expected{Issuer: issuer, AnyAudience: jwt.Audience{"other.example.com"}, Time: now}, 0); err == nil {
		t.Error("assertion accepted for another audience")
	}
}

func TestSigner_ExpiryBoundedByCredential(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_700_000_000, 0)
	s, _ := NewFromSeed(seed(3), issuer, WithClock(func() time.Time { return now }))
	cases := []struct {
		name     string
		notAfter time.Time
		wantExp  time.Time
		wantErr  bool
	}{
		{"unbounded", time.Time{}, now.Add(MaxLifetime), false},
		{"credential later", now.Add(time.Hour), now.Add(MaxLifetime), false},
		{"credential sooner", now.Add(time.Minute), now.Add(time.Minute), false},
		{"credential expired", now.Add(-time.Second), time.Time{}, true},
		{"credential expires now", now, time.Time{}, true},
	}
	for _, tc := range cases {
		_, exp, err := s.Sign("h", Identity{Subject: "u"}, tc.notAfter)
		if (err != nil) != tc.wantErr || !exp.Equal(tc.wantExp) {
			t.Errorf("%s: exp = %v, err = %v; want %v, error %v", tc.name, exp, err, tc.wantExp, tc.wantErr)
		}
	}
	if _, _, err := s.Sign("", Identity{Subject: "u"}, time.Time{}); err == nil {
		t.Error("empty audience accepted")
	}
}

func TestSigner_KeyIDIsRFC7638Thumbprint(t *testing.T) {
	t.Parallel()
	s, _ := NewFromSeed(seed(4), issuer)
	point, err := s.PublicKey().Bytes() // 0x04 || X || Y
	if err != nil {
		t.Fatal(err)
	}
	enc := func(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
	x, y := point[1:33], point[33:65]
	canonical := `{"crv":"P-256","kty":"EC","x":"` + enc(x) + `","y":"` + enc(y) + `"}`
	sum := sha256.Sum256([]byte(canonical))
	if s.KeyID() != enc(sum[:]) {
		t.Errorf("kid = %q, want thumbprint %q", s.KeyID(), enc(sum[:]))
	}
}

func TestJWKS_PublishesPublicKeyOnlyWithCaching(t *testing.T) {
	t.Parallel()
	s, _ := NewFromSeed(seed(5), issuer)
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/.well-known/gateway/jwks.json", nil))
	body, _ := io.ReadAll(rec.Body)
	if rec.Code != 200 || rec.Header().Get("Cache-Control") != JWKSCacheControl || rec.Header().Get("Content-Type") != "application/json" {
		t.Errorf("status %d, headers %v", rec.Code, rec.Header())
	}
	var raw struct {
		Keys []map[string]any `json:"keys"`
	}
	if err := json.Unmarshal(body, &raw); err != nil || len(raw.Keys) != 1 {
		t.Fatalf("body %s: %v", body, err)
	}
	k := raw.Keys[0]
	if _, ok := k["d"]; ok {
		t.Fatal("JWKS contains the private key")
	}
	for _, f := range []string{"kty", "crv", "x", "y", "kid", "alg", "use"} {
		if _, ok := k[f]; !ok {
			t.Errorf("JWKS key lacks %s", f)
		}
	}
	if got := s.JWKS(); len(got.Keys) != 1 || !got.Keys[0].IsPublic() {
		t.Error("JWKS() not one public key")
	}
}

func TestDeriveKey_ScalarInRange(t *testing.T) {
	t.Parallel()
	var kids []string
	for i := range 32 {
		k, err := deriveKey(seed(byte(i)))
		if err != nil {
			t.Fatal(err)
		}
		raw, err := k.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		d := new(big.Int).SetBytes(raw)
		if d.Sign() <= 0 || d.Cmp(k.Curve.Params().N) >= 0 {
			t.Fatalf("scalar out of range for seed %d", i)
		}
		kids = append(kids, d.String())
	}
	slices.Sort(kids)
	if len(slices.Compact(kids)) != 32 {
		t.Error("distinct seeds gave equal keys")
	}
}

func BenchmarkSign(b *testing.B) {
	s, _ := NewFromSeed(seed(6), issuer)
	id := Identity{Subject: "alice", Email: "alice@example.com", Name: "Alice", Groups: []string{"eng"}}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := s.Sign("mcp.example.com", id, time.Time{}); err != nil {
			b.Fatal(err)
		}
	}
}
