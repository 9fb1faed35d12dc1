package storetest

import (
	"testing"
	"time"

	"github.com/mcpmesh/gateway/tokensvc/store"
)

// reuseInterval is the interval the reuse cases rotate with.
const reuseInterval = 5 * time.Second

// testRefreshReuseInterval walks the interval's edges: presenting a rotated
// token again with the successor its first rotation stored is granted up to
// and including reuse after that rotation, changes nothing and keeps one live
// token; a different successor, a later presentation, or a presentation after
// the successor itself rotated revokes the family.
func testRefreshReuseInterval(t *testing.T, s store.Store) {
	sess := newSession(t, s)
	rotated := t0.Add(time.Minute)
	exp := rotated.Add(time.Hour)

	// setup returns a grant whose first token was rotated at `rotated` into next.
	setup := func(t *testing.T) (store.Grant, store.RefreshToken, store.RefreshToken, store.AccessToken) {
		g, rt := newGrant(t, s, sess.ID)
		next := store.RefreshToken{Hash: Hash(t), CreatedAt: rotated, ExpiresAt: exp}
		_, err := s.RotateRefreshTokenWithin(ctx(t), rt.Hash, next, rotated, reuseInterval)
		wantErr(t, "first rotation", err, nil)
		return g, rt, next, newAccessToken(t, s, g)
	}
	revoked := func(t *testing.T, g store.Grant, at store.AccessToken) {
		t.Helper()
		got, err := s.GetGrant(ctx(t), g.ID)
		wantErr(t, "get grant", err, nil)
		if got.RevokedAt.IsZero() {
			t.Fatal("the family is still live")
		}
		_, err = s.GetAccessToken(ctx(t), at.Hash, rotated)
		wantErr(t, "access token of the revoked family", err, store.ErrNotFound)
	}

	t.Run("WithinGetsSameSuccessor", func(t *testing.T) {
		g, rt, next, at := setup(t)
		for _, d := range []time.Duration{0, time.Second, reuseInterval} {
			got, err := s.RotateRefreshTokenWithin(ctx(t), rt.Hash, next, rotated.Add(d), reuseInterval)
			wantErr(t, "present again "+d.String()+" after rotation", err, nil)
			wantEqual(t, "grant", got.ID, g.ID)
		}
		gotNext, _, err := s.GetRefreshToken(ctx(t), next.Hash, rotated)
		wantErr(t, "successor", err, nil)
		if !gotNext.UsedAt.IsZero() {
			t.Fatal("granting the interval spent the successor")
		}
		_, err = s.GetAccessToken(ctx(t), at.Hash, rotated)
		wantErr(t, "access token", err, nil)
		gotOld, _, err := s.GetRefreshToken(ctx(t), rt.Hash, rotated)
		wantErr(t, "old token", err, nil)
		wantEqual(t, "old token rotated at", gotOld.UsedAt, store.Time(rotated))
	})
	t.Run("AfterIntervalRevokes", func(t *testing.T) {
		g, rt, next, at := setup(t)
		_, err := s.RotateRefreshTokenWithin(ctx(t), rt.Hash, next, rotated.Add(reuseInterval+time.Microsecond), reuseInterval)
		wantErr(t, "present again just after the interval", err, store.ErrRefreshReused)
		revoked(t, g, at)
	})
	t.Run("OtherSuccessorRevokes", func(t *testing.T) {
		g, rt, _, at := setup(t)
		other := store.RefreshToken{Hash: Hash(t), CreatedAt: rotated, ExpiresAt: exp}
		_, err := s.RotateRefreshTokenWithin(ctx(t), rt.Hash, other, rotated.Add(time.Second), reuseInterval)
		wantErr(t, "present again with another successor", err, store.ErrRefreshReused)
		revoked(t, g, at)
	})
	t.Run("SuccessorOfAnotherGrantRevokes", func(t *testing.T) {
		g, rt, _, at := setup(t)
		_, _, foreignNext, _ := setup(t) // a live unrotated token of another family
		_, err := s.RotateRefreshTokenWithin(ctx(t), rt.Hash, foreignNext, rotated.Add(time.Second), reuseInterval)
		wantErr(t, "present again naming another family's token", err, store.ErrRefreshReused)
		revoked(t, g, at)
	})
	t.Run("AfterSuccessorRotatedRevokes", func(t *testing.T) {
		g, rt, next, at := setup(t)
		third := store.RefreshToken{Hash: Hash(t), CreatedAt: rotated, ExpiresAt: exp}
		_, err := s.RotateRefreshTokenWithin(ctx(t), next.Hash, third, rotated.Add(time.Second), reuseInterval)
		wantErr(t, "rotate the successor", err, nil)
		_, err = s.RotateRefreshTokenWithin(ctx(t), rt.Hash, next, rotated.Add(2*time.Second), reuseInterval)
		wantErr(t, "present the first token again", err, store.ErrRefreshReused)
		revoked(t, g, at)
	})
	t.Run("ZeroIntervalRevokes", func(t *testing.T) {
		g, rt, next, at := setup(t)
		_, err := s.RotateRefreshTokenWithin(ctx(t), rt.Hash, next, rotated, 0)
		wantErr(t, "present again with the interval off", err, store.ErrRefreshReused)
		revoked(t, g, at)
	})
}

// testRefreshConcurrentWithinInterval races rotations of one token that all
// name the same successor (as the token service's derived successor does):
// every one succeeds, and the family ends with exactly one live token, the
// successor.
func testRefreshConcurrentWithinInterval(t *testing.T, s store.Store) {
	sess := newSession(t, s)
	g, rt := newGrant(t, s, sess.ID)
	now := t0.Add(time.Second)
	next := store.RefreshToken{Hash: Hash(t), CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	errs := race(func(int) error {
		got, err := s.RotateRefreshTokenWithin(ctx(t), rt.Hash, next, now, reuseInterval)
		if err == nil && got.ID != g.ID {
			t.Errorf("rotation returned grant %q, want %q", got.ID, g.ID)
		}
		return err
	})
	if wins, _ := tally(t, "rotate", errs); wins != racers {
		t.Fatalf("%d of %d concurrent rotations succeeded, want all (errors %v)", wins, racers, errs)
	}
	got, err := s.GetGrant(ctx(t), g.ID)
	wantErr(t, "get grant", err, nil)
	if !got.RevokedAt.IsZero() {
		t.Fatal("concurrent rotations within the interval revoked the family")
	}
	succ, _, err := s.GetRefreshToken(ctx(t), next.Hash, now)
	wantErr(t, "successor", err, nil)
	if !succ.UsedAt.IsZero() {
		t.Fatal("the successor is spent")
	}
	old, _, err := s.GetRefreshToken(ctx(t), rt.Hash, now)
	wantErr(t, "old token", err, nil)
	if old.UsedAt.IsZero() {
		t.Fatal("the old token is unspent")
	}
	// The family's only live token rotates once more, normally.
	_, err = s.RotateRefreshTokenWithin(ctx(t), next.Hash, store.RefreshToken{Hash: Hash(t), CreatedAt: now, ExpiresAt: now.Add(time.Hour)}, now, reuseInterval)
	wantErr(t, "rotate the successor", err, nil)
}
