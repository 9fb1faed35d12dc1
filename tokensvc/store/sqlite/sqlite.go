package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/mcpmesh/gateway/tokensvc/store"
)

//go:embed migrations/*.sql
var migrations embed.FS

// busyTimeout is how long a connection waits for another's lock.
const busyTimeout = 10 * time.Second

// Store is a [store.Store] on one SQLite database file.
type Store struct {
	w *db // exactly one connection; every write
	r *db // read-only connections
}

var _ store.Store = (*Store)(nil)

// New opens (creating if needed) the SQLite database at path and brings its
// schema up to date.
func New(ctx context.Context, path string) (*Store, error) {
	if path == "" || strings.ContainsAny(path, "?#") || strings.HasPrefix(path, "file:") || path == ":memory:" {
		return nil, fmt.Errorf("open sqlite store: path %q must be a plain file path", path)
	}
	// The file holds sealed secrets and token hashes: owner-only. SQLite
	// gives the -wal and -shm files the main file's mode.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open sqlite store: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("open sqlite store: %w", err)
	}
	params := "?_pragma=" + fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()) +
		"&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate"
	w, err := sql.Open("sqlite", path+params)
	if err != nil {
		return nil, fmt.Errorf("open sqlite store %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	s := &Store{w: newDB(w)}
	if err := s.migrate(ctx); err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("open sqlite store %s: %w", path, err)
	}
	r, err := sql.Open("sqlite", path+params+"&_query_only=1")
	if err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("open sqlite store %s: %w", path, err)
	}
	n := max(2, runtime.GOMAXPROCS(0))
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)
	s.r = newDB(r)
	return s, nil
}

// Close closes the database.
func (s *Store) Close() error {
	return errors.Join(s.r.Close(), s.w.Close())
}

// migrate applies the embedded migrations not yet recorded in
// schema_migrations, each in its own IMMEDIATE transaction, so concurrent
// openers of one file serialise.
func (s *Store) migrate(ctx context.Context) error {
	if _, err := s.w.DB.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL) STRICT`); err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return fmt.Errorf("list migrations: %w", err)
	}
	sort.Strings(names)
	for _, name := range names {
		base := strings.TrimPrefix(name, "migrations/")
		version, err := strconv.Atoi(strings.SplitN(base, "_", 2)[0])
		if err != nil {
			return fmt.Errorf("migration %s: name must start with a version number", name)
		}
		body, err := migrations.ReadFile(name)
		if err != nil {
			return fmt.Errorf("read migration %s: %w", name, err)
		}
		if err := rawTx(ctx, s.w.DB, func(tx *sql.Tx) error {
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE version = ?`, version).Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				return nil
			}
			if _, err := tx.ExecContext(ctx, string(body)); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`,
				version, time.Now().UnixMicro())
			return err
		}); err != nil {
			return fmt.Errorf("apply migration %s: %w", name, err)
		}
	}
	return nil
}

// rawTx runs fn in a transaction of d without the statement cache.
func rawTx(ctx context.Context, d *sql.DB, fn func(tx *sql.Tx) error) error {
	tx, err := d.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// tx runs fn in a write transaction and commits it if fn returns nil.
func (s *Store) tx(ctx context.Context, fn func(tx *wtx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	t := &wtx{tx: tx, d: s.w}
	defer func() {
		for _, q := range t.missed {
			s.w.prepare(ctx, q)
		}
	}()
	if err := fn(t); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// ts converts a time to its column value: microseconds, NULL when zero.
func ts(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMicro()
}

// now converts the caller's clock reading the way stored times are.
func now(t time.Time) int64 { return store.Time(t).UnixMicro() }

// nullTime scans a time column.
type nullTime struct{ t *time.Time }

func (n nullTime) Scan(v any) error {
	switch v := v.(type) {
	case nil:
		*n.t = time.Time{}
	case int64:
		*n.t = time.UnixMicro(v).UTC()
	default:
		return fmt.Errorf("time column holds %T", v)
	}
	return nil
}

// jsonList scans a JSON-array column into a []string.
type jsonList struct{ s *[]string }

func (j jsonList) Scan(v any) error {
	*j.s = nil
	var b []byte
	switch v := v.(type) {
	case nil:
		return nil
	case string:
		b = []byte(v)
	case []byte:
		b = v
	default:
		return fmt.Errorf("list column holds %T", v)
	}
	if err := json.Unmarshal(b, j.s); err != nil {
		return fmt.Errorf("list column: %w", err)
	}
	if len(*j.s) == 0 {
		*j.s = nil
	}
	return nil
}

// list converts a []string to its column value.
func list(s []string) (any, error) {
	if len(s) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	return string(b), nil
}

// blob converts bytes to a column value, NULL when empty.
func blob(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return b
}

// blobDest scans a BLOB column, leaving nil for NULL or empty.
type blobDest struct{ b *[]byte }

func (d blobDest) Scan(v any) error {
	switch v := v.(type) {
	case nil:
		*d.b = nil
	case []byte:
		if len(v) == 0 {
			*d.b = nil
		} else {
			*d.b = append([]byte(nil), v...)
		}
	case string:
		*d.b = []byte(v)
	default:
		return fmt.Errorf("blob column holds %T", v)
	}
	return nil
}

// isUnique reports whether err is a primary-key or unique violation.
func isUnique(err error) bool {
	var e *sqlite.Error
	if !errors.As(err, &e) {
		return false
	}
	return e.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY || e.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE
}

// insertErr maps an insert error, naming the operation.
func insertErr(op string, err error) error {
	if isUnique(err) {
		return fmt.Errorf("%s: %w", op, store.ErrAlreadyExists)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// rowErr maps a single-row query error, naming the operation.
func rowErr(op string, err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%s: %w", op, store.ErrNotFound)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// affected maps an exec result to ErrNotFound when it changed no row.
func affected(op string, res sql.Result, err error) error {
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if n == 0 {
		return fmt.Errorf("%s: %w", op, store.ErrNotFound)
	}
	return nil
}
