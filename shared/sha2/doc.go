// Package sha2 computes SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104) without the standard
// library's crypto packages. It exists for the wasm filter's size: importing crypto/sha256 or
// crypto/hmac links the whole FIPS 140 module, whose package initialisation registers the
// self-tests of AES, SHA-3, SHA-512 and its DRBG (181 KB of the module, BENCHMARKS.md
// "Module size"). The filter needs only SHA-256: the tool digests of shared/tooldigest and the
// session tags of filter/plugin.
//
// It owns:
//
//   - [Sum256], the digest of a message;
//   - [MAC], an HMAC-SHA256 keyed once and reused (Reset, Write, Sum);
//   - [Equal], a comparison of two MACs in time independent of their contents.
//
// Fuzz targets named *_MatchesStdlib compare them with crypto/sha256, crypto/hmac and
// crypto/subtle, which only the tests import.
package sha2
