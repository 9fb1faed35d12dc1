package oauth

import (
	"slices"
	"testing"

	"github.com/go-jose/go-jose/v4"
)

// FuzzClientAssertion checks the client assertion parser (assertion.go): no panics, and
// whatever it accepts is one JWS signature with an asymmetric algorithm whose iss and sub are
// the same non-empty client ID. Seeds: testdata/fuzz.
func FuzzClientAssertion(f *testing.F) {
	f.Fuzz(func(t *testing.T, raw string) {
		pa, err := parseClientAssertion(raw)
		if err != nil {
			return
		}
		if len(raw) > maxAssertionBytes || pa.clientID == "" || len(pa.tok.Headers) != 1 {
			t.Fatalf("accepted %q: %+v", raw, pa)
		}
		if !slices.Contains(assertionAlgorithms, jose.SignatureAlgorithm(pa.alg)) {
			t.Fatalf("accepted algorithm %q", pa.alg)
		}
	})
}

// FuzzParseJWKS checks the JWK Set parser: no panics, and only sets of 1 to maxJWKSKeys
// public, asymmetric keys are accepted.
func FuzzParseJWKS(f *testing.F) {
	f.Add([]byte(`{"keys":[{"kty":"EC","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0","kid":"k"}]}`))
	f.Add([]byte(`{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		set, err := parseJWKS(body)
		if err != nil {
			return
		}
		if len(set.Keys) == 0 || len(set.Keys) > maxJWKSKeys {
			t.Fatalf("accepted %d keys", len(set.Keys))
		}
		for _, k := range set.Keys {
			if _, sym := k.Key.([]byte); sym || !k.IsPublic() {
				t.Fatalf("accepted a private or symmetric key: %s", body)
			}
		}
	})
}
