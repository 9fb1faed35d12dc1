package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"sync"
)

// db is a connection pool that prepares each distinct query once and keeps
// the statement: SQLite spends most of a point lookup compiling SQL. The
// queries are the package's constant strings, so the cache stays small.
type db struct {
	*sql.DB
	mu    sync.Mutex
	stmts map[string]*sql.Stmt
}

func newDB(d *sql.DB) *db { return &db{DB: d, stmts: map[string]*sql.Stmt{}} }

// cached returns the prepared statement of q, or nil if it is not prepared.
func (d *db) cached(q string) *sql.Stmt {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stmts[q]
}

// prepare returns the prepared statement of q, preparing it if needed; nil
// if preparing fails (the caller then runs q unprepared, which reports the
// error). It needs a free connection: never call it inside a transaction.
func (d *db) prepare(ctx context.Context, q string) *sql.Stmt {
	if st := d.cached(q); st != nil {
		return st
	}
	st, err := d.DB.PrepareContext(ctx, q)
	if err != nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if prev, ok := d.stmts[q]; ok {
		_ = st.Close()
		return prev
	}
	d.stmts[q] = st
	return st
}

// QueryRowContext runs q prepared.
func (d *db) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	if st := d.prepare(ctx, q); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return d.DB.QueryRowContext(ctx, q, args...)
}

// QueryContext runs q prepared.
func (d *db) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if st := d.prepare(ctx, q); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return d.DB.QueryContext(ctx, q, args...)
}

// ExecContext runs q prepared.
func (d *db) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	if st := d.prepare(ctx, q); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return d.DB.ExecContext(ctx, q, args...)
}

// Close closes the statements and the pool.
func (d *db) Close() error {
	d.mu.Lock()
	var errs []error
	for _, st := range d.stmts {
		errs = append(errs, st.Close())
	}
	d.stmts = nil
	d.mu.Unlock()
	return errors.Join(append(errs, d.DB.Close())...)
}

// wtx is a write transaction that uses the writer's prepared statements.
// A query not yet prepared runs unprepared (preparing needs the connection
// the transaction holds) and is prepared after the transaction ends.
type wtx struct {
	tx     *sql.Tx
	d      *db
	missed []string
}

func (t *wtx) stmt(ctx context.Context, q string) *sql.Stmt {
	st := t.d.cached(q)
	if st == nil {
		t.missed = append(t.missed, q)
		return nil
	}
	return t.tx.StmtContext(ctx, st)
}

// QueryRowContext runs q in the transaction.
func (t *wtx) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	if st := t.stmt(ctx, q); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return t.tx.QueryRowContext(ctx, q, args...)
}

// ExecContext runs q in the transaction.
func (t *wtx) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	if st := t.stmt(ctx, q); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return t.tx.ExecContext(ctx, q, args...)
}
