// Package reliability holds the fault, load and hostile-traffic suite of the gateway: the
// token service's database cut or hung under traffic (TestPostgresOutage), with a browser
// sign-in (TestPostgresOutage_BrowserSignIn) and the Internal Token refresh of an
// upstream_oauth2 route (TestPostgresOutage_InternalToken) caught in it; a real PostgreSQL
// server restarted, crashed and its connections terminated under load (TestPostgresRestart:
// a server of the test's own, pgserver_test.go) and the token service's connection pool
// dropped on the shared database (TestPostgresDroppedPool); the token service run as separate
// replica processes that die, hang or answer garbage (TestTokenServiceOutage); a crash during
// a refresh; floods against the public listener; the filter's memory under many tokens; and
// a soak of 2,000 users (TestSoak) with the gateway in a process of its own
// (gwprocess_test.go: TestMain turns the test binary into that process). Each test reports
// what a user would see — requests sent, allowed, denied, 401, 503, wrongly allowed (must be
// 0) — and the records in the store before and after each fault (nothing lost).
//
// It needs the Node packages of wasmtest/e2e/node (make e2e-deps) for the real OpenID
// providers, and PostgreSQL (GATEWAY_TEST_POSTGRES_DSN) for the tests that cut or share a
// database; without it those skip. TestPostgresRestart also needs PostgreSQL's initdb and
// pg_ctl (as root, a postgres user to run them as); without them it skips. `make test` runs
// the short version; `make reliability` runs the whole suite with larger counts
// (GATEWAY_RELIABILITY=full), including TestPostgresRestart and TestSoak. Figures and
// commands are in RELIABILITY.md.
package reliability
