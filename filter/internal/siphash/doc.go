// Package siphash is SipHash-2-4 with a 128-bit output (Aumasson and Bernstein, "SipHash: a
// fast short-input PRF", 2012, and the 128-bit variant of its reference implementation),
// written for the filter's decision-cache key.
//
// The filter keys its decision cache by a keyed pseudorandom function of the request's
// credential, with a key drawn at random per cache, so that the credential itself is not kept.
// What must hold is that no request can land on another credential's entry: a caller would need
// a credential whose 128-bit output equals that of a credential it does not know, under a key
// it does not know — a second preimage, not a collision, so even a known key would leave
// about 2^128 tries per entry. SHA-256 served the same purpose, but one SHA-256 block costs
// about 25,000 instructions in the wasm filter, SipHash a small fraction of that
// (BENCHMARKS.md). The outputs are compared inside the VM and never sent anywhere.
package siphash
