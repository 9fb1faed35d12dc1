package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/tokensvc/hosts"
	"github.com/mcpmesh/gateway/tokensvc/secret"
	"github.com/mcpmesh/gateway/tokensvc/store"
)

// private_key_jwt client authentication (RFC 7523 §2.2, OpenID Connect Core §9) for clients
// identified by a client ID metadata document (docs/clients.md "Client ID metadata
// documents"). The document names token_endpoint_auth_method private_key_jwt and a jwks_uri;
// the client signs a short-lived JWT (iss = sub = its client_id, aud = the token endpoint or
// the issuer, exp, jti) with one of those keys. The keys are fetched through the same
// SSRF-guarded client as the documents (jwks.go), from a host in
// mcp_allowed_client_id_domains; each jti is accepted once (a store.OneTime until the
// assertion expires, so across replicas). Only asymmetric algorithms are accepted: a JWT
// signed with HS256 using the public key as the secret, or alg none, fails to parse.

const (
	authPrivateKeyJWT = "private_key_jwt"
	// clientAssertionTypeJWT is the client_assertion_type of a JWT client assertion.
	clientAssertionTypeJWT = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
	// maxAssertionBytes bounds a client assertion.
	maxAssertionBytes = 8 << 10
	// maxAssertionLifetime bounds how far in the future an assertion's exp may be, so that
	// the jti records it leaves stay few and short-lived.
	maxAssertionLifetime = 10 * time.Minute
	// assertionLeeway tolerates clock skew in exp, nbf and iat.
	assertionLeeway = 30 * time.Second
	// oneTimeKindAssertion is the store.OneTime kind of a used assertion's jti.
	oneTimeKindAssertion = "client_assertion"
	maxJTILen            = 256
)

// assertionAlgorithms are the signature algorithms accepted in client assertions.
var assertionAlgorithms = []jose.SignatureAlgorithm{
	jose.ES256, jose.ES384, jose.ES512, jose.RS256, jose.RS384, jose.RS512,
	jose.PS256, jose.PS384, jose.PS512, jose.EdDSA,
}

// errAssertion wraps every reason a client assertion is refused.
var errAssertion = errors.New("client assertion refused")

// parsedAssertion is a client assertion whose structure has been checked, not its signature.
type parsedAssertion struct {
	tok *jwt.JSONWebToken
	// kid and alg are from the protected header.
	kid, alg string
	// clientID is the unverified sub (equal to iss), naming the client to look up.
	clientID string
}

// parseClientAssertion parses a client assertion without verifying it: compact JWS, one
// signature, an accepted algorithm, and iss = sub naming a client. Nothing in it is trusted
// until verifyClientAssertion has checked the signature.
func parseClientAssertion(raw string) (parsedAssertion, error) {
	if raw == "" || len(raw) > maxAssertionBytes {
		return parsedAssertion{}, fmt.Errorf("%w: empty or larger than %d bytes", errAssertion, maxAssertionBytes)
	}
	tok, err := jwt.ParseSigned(raw, assertionAlgorithms)
	if err != nil {
		return parsedAssertion{}, fmt.Errorf("%w: not a JWT signed with an asymmetric algorithm (%s)", errAssertion, algList())
	}
	if len(tok.Headers) != 1 {
		return parsedAssertion{}, fmt.Errorf("%w: want exactly one signature", errAssertion)
	}
	var c jwt.Claims
	if err := tok.UnsafeClaimsWithoutVerification(&c); err != nil {
		return parsedAssertion{}, fmt.Errorf("%w: malformed claims", errAssertion)
	}
	if c.Subject == "" || c.Issuer != c.Subject {
		return parsedAssertion{}, fmt.Errorf("%w: iss and sub must both be the client_id", errAssertion)
	}
	h := tok.Headers[0]
	return parsedAssertion{tok: tok, kid: h.KeyID, alg: h.Algorithm, clientID: c.Subject}, nil
}

func algList() string { return strings.Join(assertionAlgNames(), ", ") }

// assertionAlgNames names assertionAlgorithms (the AS metadata's
// token_endpoint_auth_signing_alg_values_supported).
func assertionAlgNames() []string {
	names := make([]string, len(assertionAlgorithms))
	for i, a := range assertionAlgorithms {
		names[i] = string(a)
	}
	return names
}

// verifyClientAssertion checks the signature of a parsed assertion against the keys at
// jwksURI (refetched once when no key matches) and its claims, then spends its jti.
func (s *Server) verifyClientAssertion(ctx context.Context, h *hosts.Host, pa parsedAssertion, clientID, jwksURI string) error {
	var claims jwt.Claims
	verified := false
	for attempt := 0; attempt < 2 && !verified; attempt++ {
		set, err := s.jwks.keys(ctx, jwksURI, attempt == 1)
		if err != nil {
			return fmt.Errorf("%w: %w", errAssertion, err)
		}
		for _, k := range candidateKeys(set, pa.kid, pa.alg) {
			if pa.tok.Claims(k.Key, &claims) == nil {
				verified = true
				break
			}
		}
		if verified || !s.jwks.mayRefetch(jwksURI) {
			break
		}
	}
	if !verified {
		return fmt.Errorf("%w: no key of the client's jwks_uri verifies the signature", errAssertion)
	}
	now := s.now()
	if claims.Issuer != clientID || claims.Subject != clientID {
		return fmt.Errorf("%w: iss and sub must both be the client_id", errAssertion)
	}
	if !audienceAccepted(claims.Audience, h) {
		return fmt.Errorf("%w: aud must be this server's token endpoint or issuer", errAssertion)
	}
	if claims.Expiry == nil {
		return fmt.Errorf("%w: exp is required", errAssertion)
	}
	exp := claims.Expiry.Time()
	switch {
	case !now.Before(exp.Add(assertionLeeway)):
		return fmt.Errorf("%w: the assertion has expired", errAssertion)
	case exp.After(now.Add(maxAssertionLifetime + assertionLeeway)):
		return fmt.Errorf("%w: exp is more than %v ahead", errAssertion, maxAssertionLifetime)
	case claims.NotBefore != nil && claims.NotBefore.Time().After(now.Add(assertionLeeway)):
		return fmt.Errorf("%w: the assertion is not valid yet (nbf)", errAssertion)
	case claims.IssuedAt != nil && claims.IssuedAt.Time().After(now.Add(assertionLeeway)):
		return fmt.Errorf("%w: iat is in the future", errAssertion)
	case claims.ID == "" || len(claims.ID) > maxJTILen:
		return fmt.Errorf("%w: jti is required (at most %d characters)", errAssertion, maxJTILen)
	}
	// Spend the jti: of two requests with the same assertion, one wins, across replicas.
	err := s.store.PutOneTime(ctx, store.OneTime{
		Hash:      secret.Hash("client-assertion:" + clientID + "\x00" + claims.ID),
		Kind:      oneTimeKindAssertion,
		ExpiresAt: exp.Add(assertionLeeway),
	})
	if errors.Is(err, store.ErrAlreadyExists) {
		return fmt.Errorf("%w: this assertion (jti) was already used", errAssertion)
	}
	if err != nil {
		return fmt.Errorf("record the assertion's jti: %w", err)
	}
	return nil
}

// candidateKeys returns the public signing keys of set that may have signed a JWS with kid
// and alg: the key with that kid (or every key when kid is empty), never a symmetric or
// private key, never one whose own alg or use says otherwise.
func candidateKeys(set *jose.JSONWebKeySet, kid, alg string) []jose.JSONWebKey {
	var out []jose.JSONWebKey
	for _, k := range set.Keys {
		if kid != "" && k.KeyID != kid {
			continue
		}
		if !k.Valid() || !k.IsPublic() || (k.Use != "" && k.Use != "sig") || (k.Algorithm != "" && k.Algorithm != alg) {
			continue
		}
		if _, symmetric := k.Key.([]byte); symmetric {
			continue
		}
		out = append(out, k)
	}
	return out
}

// audienceAccepted reports whether aud names h's token endpoint, revocation endpoint or
// issuer (the endpoints that authenticate clients here, and the issuer that OAuth 2.1
// recommends).
func audienceAccepted(aud jwt.Audience, h *hosts.Host) bool {
	accepted := []string{h.Origin, h.Origin + "/", h.Origin + paths.Token, h.Origin + paths.Revoke}
	return slices.ContainsFunc(aud, func(a string) bool { return slices.Contains(accepted, a) })
}

// parseJWKSURI validates a jwks_uri: the rules of a client ID URL (https, a DNS name, a path,
// no userinfo, fragment or dot segments).
func parseJWKSURI(raw string) (*url.URL, error) {
	u, err := parseClientIDURL(raw)
	if err != nil {
		return nil, errors.New(strings.ReplaceAll(err.Error(), "client ID URL", "jwks_uri"))
	}
	return u, nil
}
