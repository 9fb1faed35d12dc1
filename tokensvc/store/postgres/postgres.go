package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mcpmesh/gateway/tokensvc/store"
)

//go:embed migrations/*.sql
var migrations embed.FS

// lockNamespace is the first key of the advisory lock taken while
// migrating; the second is the hash of the target schema's name, so
// migrations of different schemas in one database do not wait on each other.
const lockNamespace = 0x6d636d67 // "mcmg"

// Store is a [store.Store] on a PostgreSQL database. Several Stores (in one
// process or many) may share one database.
type Store struct {
	pool *pgxpool.Pool
}

var _ store.Store = (*Store)(nil)

// New connects to the database at dsn (a URL or key=value connection
// string, as pgx accepts) and brings its schema up to date.
func New(ctx context.Context, dsn string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgx's parse errors may quote the DSN, password included.
		return nil, errors.New("open postgres store: cannot parse DSN")
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open postgres store: %w", err)
	}
	s := &Store{pool: pool}
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open postgres store: %w", err)
	}
	return s, nil
}

// Close closes the connection pool.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// migrate applies the embedded migrations not yet recorded in
// schema_migrations, holding an advisory lock so that replicas starting
// together apply each migration once.
func (s *Store) migrate(ctx context.Context) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Release()

	var schema *string
	if err := conn.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return fmt.Errorf("read current schema: %w", err)
	}
	if schema == nil {
		return errors.New("no schema: the first schema of search_path does not exist")
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1, hashtext($2))`, lockNamespace, *schema); err != nil {
		return fmt.Errorf("lock for migration: %w", err)
	}
	defer func() {
		// A fresh context: unlock even if ctx was cancelled meanwhile.
		unlockCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := conn.Exec(unlockCtx, `SELECT pg_advisory_unlock($1, hashtext($2))`, lockNamespace, *schema); err != nil {
			// The lock dies with the session; make sure the session dies.
			_ = conn.Conn().Close(unlockCtx)
		}
	}()

	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`); err != nil {
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
		err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			var applied bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = $1)`,
				version).Scan(&applied); err != nil {
				return err
			}
			if applied {
				return nil
			}
			// Simple protocol: a migration file holds several statements.
			if _, err := tx.Exec(ctx, string(body), pgx.QueryExecModeSimpleProtocol); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version) VALUES ($1)`, version)
			return err
		})
		if err != nil {
			return fmt.Errorf("apply migration %s: %w", name, err)
		}
	}
	return nil
}

// tx runs fn in a transaction and commits it if fn returns nil.
func (s *Store) tx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, s.pool, fn)
}

// ts converts a time to its argument: NULL when zero.
func ts(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

// now converts the caller's clock reading the way stored times are.
func now(t time.Time) time.Time { return store.Time(t) }

// tsDest scans a TIMESTAMPTZ column into a UTC time, zero for NULL.
type tsDest struct{ t *time.Time }

func (d tsDest) ScanTimestamptz(v pgtype.Timestamptz) error {
	if !v.Valid || v.InfinityModifier != pgtype.Finite {
		*d.t = time.Time{}
		return nil
	}
	*d.t = v.Time.UTC()
	return nil
}

// blob converts bytes to an argument, NULL when empty.
func blob(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return b
}

// list converts strings to an argument, NULL when empty.
func list(s []string) any {
	if len(s) == 0 {
		return nil
	}
	return s
}

// insertErr maps an insert error, naming the operation.
func insertErr(op string, err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" { // unique_violation
		return fmt.Errorf("%s: %w", op, store.ErrAlreadyExists)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// rowErr maps a single-row query error, naming the operation.
func rowErr(op string, err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%s: %w", op, store.ErrNotFound)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// affected maps an exec result to ErrNotFound when it changed no row.
func affected(op string, tag pgconn.CommandTag, err error) error {
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%s: %w", op, store.ErrNotFound)
	}
	return nil
}
