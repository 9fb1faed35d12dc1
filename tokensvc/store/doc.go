// Package store defines the token service's single storage interface, [Store],
// the records it keeps, and the sentinel errors callers branch on.
//
// The store keeps only what callers give it. Token values (access tokens,
// refresh tokens, authorization codes, cookies, one-time values) arrive as
// SHA-256 hashes computed by the caller; secrets (IDP tokens, Internal
// Tokens) arrive already sealed. A store never sees a plaintext token.
//
// Backends live in subpackages: memory (tests and `storage: {type: memory}`),
// sqlite (the embedded default) and postgres (several replicas on one
// database). Every backend passes the conformance suite in storetest, which
// checks each operation, expiry, atomicity under concurrency and garbage
// collection.
//
// # Conventions shared by every backend
//
//   - Times are stored in UTC with microsecond precision: a record read back
//     has its times converted with [Time]. A zero time is stored as "unset".
//   - Getters of records that expire take the caller's clock reading (now) and
//     answer [ErrNotFound] for a record whose ExpiresAt is not after now, so an
//     expired record is indistinguishable from one that never existed.
//     ExpiresAt is exclusive: a record is live while now < ExpiresAt.
//   - Create operations answer [ErrAlreadyExists] when the key is taken.
//   - Operations that consume (TakeAuthCode, TakeOneTime, RotateRefreshToken)
//     are atomic across goroutines, processes and replicas sharing one
//     database: of two concurrent callers exactly one wins.
//   - Single-use values can be looked at without being consumed (GetAuthCode,
//     GetOneTime, GetRefreshToken), so a caller checks what a value is bound
//     to before it spends it: a caller the value is not bound to cannot burn
//     it. The look is not a reservation; the take decides who wins.
//   - Records returned are copies; mutating them does not change the store.
package store
