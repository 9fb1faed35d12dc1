// Package postgres is the backend of package store for several token-service
// replicas sharing one PostgreSQL database, on github.com/jackc/pgx/v5.
//
// Consuming operations hold across replicas without check-then-act races:
// codes and one-time values are taken with DELETE … RETURNING, refresh
// tokens are spent with UPDATE … WHERE used_at IS NULL RETURNING inside a
// transaction, and session updates are compare-and-swap on a version. The
// schema is created by migrations embedded in the binary; New applies them
// under a PostgreSQL advisory lock, so replicas starting together do not
// race. The tables live in the first schema of the connection's search_path
// (set it in the DSN, e.g. `?search_path=gateway`, to share a database).
package postgres
