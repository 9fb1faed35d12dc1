// Package reliability holds the fault, load and hostile-traffic suite of the gateway: the
// token service's database cut under traffic (TestPostgresOutage), the token service run as
// separate replica processes that die, hang or answer garbage (TestTokenServiceOutage),
// concurrent refreshes, and floods against the public listener. Each test reports what a user
// would see — requests sent, allowed, denied, 401, 503, wrongly allowed (must be 0) — and the
// records in the store before and after each fault (nothing lost).
//
// It needs the Node packages of wasmtest/e2e/node (make e2e-deps) for the real OpenID
// provider, and PostgreSQL (GATEWAY_TEST_POSTGRES_DSN) for the tests that cut or share a
// database; without it those skip. `make test` runs the short version; `make reliability`
// runs the whole suite with larger counts (GATEWAY_RELIABILITY=full). Figures and commands are
// in RELIABILITY.md.
package reliability
