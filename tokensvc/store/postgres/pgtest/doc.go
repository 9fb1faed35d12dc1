// Package pgtest gives tests an isolated PostgreSQL schema on the database
// named by GATEWAY_TEST_POSTGRES_DSN, so parallel test runs on one database
// do not collide. Tests that need PostgreSQL are opt-in: without the
// variable they skip.
package pgtest
