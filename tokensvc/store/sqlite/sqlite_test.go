package sqlite_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/tokensvc/store"
	"github.com/mcpmesh/gateway/tokensvc/store/sqlite"
	"github.com/mcpmesh/gateway/tokensvc/store/storetest"
)

func newStore(tb testing.TB) *sqlite.Store {
	tb.Helper()
	s, err := sqlite.New(tb.Context(), filepath.Join(tb.TempDir(), "gateway.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Error(err)
		}
	})
	return s
}

func TestSQLite_Conformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) store.Store { return newStore(t) })
}

func TestSQLite_ReopenKeepsRecords(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "gateway.db")
	now := time.Now()
	s, err := sqlite.New(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	sess := store.Session{ID: "sess-1", Subject: "user-1", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	if err := s.CreateSession(t.Context(), sess); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = sqlite.New(t.Context(), path) // migrations run again: no-op
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.GetSession(t.Context(), sess.ID)
	if err != nil {
		t.Fatalf("session lost across restart: %v", err)
	}
	if !got.ExpiresAt.Equal(store.Time(sess.ExpiresAt)) {
		t.Fatalf("ExpiresAt = %v, want %v", got.ExpiresAt, store.Time(sess.ExpiresAt))
	}
}

// Two stores on one file stand for two processes: the single-writer
// connection of each is not enough, the IMMEDIATE transactions must be.
func TestSQLite_TwoOpenersShareSingleUse(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "gateway.db")
	a := newStoreAt(t, path)
	b := newStoreAt(t, path)
	now := time.Now()
	for round := range 20 {
		sess := store.Session{ID: fmt.Sprintf("sess-%d", round), ExpiresAt: now.Add(time.Hour)}
		if err := a.CreateSession(t.Context(), sess); err != nil {
			t.Fatal(err)
		}
		g := store.Grant{ID: fmt.Sprintf("grant-%d", round), ClientID: "c", SessionID: sess.ID, ExpiresAt: now.Add(time.Hour)}
		old := storetest.Hash(t)
		if err := a.CreateGrant(t.Context(), g, store.RefreshToken{Hash: old, ExpiresAt: now.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i, s := range []*sqlite.Store{a, b} {
			wg.Go(func() {
				_, errs[i] = s.RotateRefreshToken(t.Context(), old, store.RefreshToken{Hash: storetest.Hash(t), ExpiresAt: now.Add(time.Hour)}, now)
			})
		}
		wg.Wait()
		wins, reused := 0, 0
		for _, err := range errs {
			switch {
			case err == nil:
				wins++
			case errors.Is(err, store.ErrRefreshReused):
				reused++
			default:
				t.Fatalf("round %d: %v", round, err)
			}
		}
		if wins != 1 || reused != 1 {
			t.Fatalf("round %d: wins %d reuse detections %d, want 1 and 1", round, wins, reused)
		}
	}
}

func TestSQLite_DatabaseFilesAreOwnerOnly(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "gateway.db")
	s := newStoreAt(t, path)
	if err := s.CreateSession(t.Context(), store.Session{ID: "s", ExpiresAt: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if mode := fi.Mode().Perm(); mode&0o077 != 0 {
			t.Errorf("%s has mode %v, want owner-only", filepath.Base(p), mode)
		}
	}
}

func TestSQLite_NewRefusesNonFilePaths(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"", ":memory:", "file:x.db", "x.db?mode=ro", "x.db#frag"} {
		if s, err := sqlite.New(t.Context(), p); err == nil {
			s.Close()
			t.Errorf("New(%q) accepted", p)
		}
	}
}

func newStoreAt(tb testing.TB, path string) *sqlite.Store {
	tb.Helper()
	s, err := sqlite.New(tb.Context(), path)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

func BenchmarkSQLite_GetAccessToken(b *testing.B) {
	storetest.BenchGetAccessToken(b, newStore(b))
}

func BenchmarkSQLite_RotateRefreshToken(b *testing.B) {
	storetest.BenchRotateRefreshToken(b, newStore(b))
}
