// Package sqlite is the embedded backend of package store, on the pure-Go
// SQLite driver modernc.org/sqlite: the token service's default storage.
//
// The database runs in WAL mode with a busy timeout. Every write goes through
// one connection whose transactions begin IMMEDIATE, so the consuming
// operations (codes, refresh-token rotation, one-time values) are atomic
// between goroutines and also between processes sharing the file; reads use
// a separate pool of read-only connections. The schema is created and
// upgraded by migrations embedded in the binary, applied by New.
package sqlite
