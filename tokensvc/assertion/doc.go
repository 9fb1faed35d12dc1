// Package assertion signs the identity assertion, the X-Gateway-Assertion JWT the filter
// hands to upstreams, and publishes its verification key as a JWKS on every host.
//
// The assertion is an ES256 JWS (header kid = the RFC 7638 thumbprint of the key) with the
// claims iss (authenticate_service_url), aud (the receiving route host), sub, email, name,
// groups, iat, exp (at most MaxLifetime after iat) and jti.
//
// # One key on every replica, without distributing it
//
// The P-256 signing key is derived deterministically from shared_secret, so every
// token-service replica signs with the same key and publishes the same JWKS. The derivation
// follows FIPS 186-5 appendix A.2.1 ("key pair generation using extra random bits"):
//
//	seed = cfg.DeriveKey("assertion-signing-key")                 // HKDF-SHA256 of shared_secret
//	c    = HKDF-SHA256(seed, info="…/p256-scalar", 40 bytes)    // 320 bits = 256 + 64 extra
//	d    = (c mod (n − 1)) + 1                                   // n: the order of P-256
//
// d is in [1, n−1] (never zero) and its bias from uniform is below 2^-64. Rotating
// shared_secret rotates the key (and every sealed secret with it).
package assertion
