// Package record validates and normalises store records on their way into a
// backend, and copies them so callers and backends never share memory. It is
// shared by the backends of package store and owns no state.
package record
