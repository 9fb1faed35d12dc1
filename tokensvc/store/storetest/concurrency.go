package storetest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/tokensvc/store"
)

// racers is how many goroutines race for one single-use value.
const racers = 16

// race runs fn(i) in racers goroutines released at once and returns their
// errors by index.
func race(fn func(i int) error) []error {
	errs := make([]error, racers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range racers {
		wg.Go(func() {
			<-start
			errs[i] = fn(i)
		})
	}
	close(start)
	wg.Wait()
	return errs
}

// tally counts nil errors and errors wrapping each target; any other error
// fails t.
func tally(t *testing.T, what string, errs []error, targets ...error) (wins int, counts []int) {
	t.Helper()
	counts = make([]int, len(targets))
next:
	for _, err := range errs {
		if err == nil {
			wins++
			continue
		}
		for i, target := range targets {
			if errors.Is(err, target) {
				counts[i]++
				continue next
			}
		}
		t.Errorf("%s: unexpected error %v", what, err)
	}
	return wins, counts
}

func testAuthCodeConcurrent(t *testing.T, s store.Store) {
	c := sampleCode(t)
	must(t, s.CreateAuthCode(ctx(t), c))
	errs := race(func(int) error {
		_, err := s.TakeAuthCode(ctx(t), c.Hash, t0)
		return err
	})
	if wins, _ := tally(t, "take code", errs, store.ErrNotFound); wins != 1 {
		t.Fatalf("%d callers took the code, want exactly 1", wins)
	}
}

func testOneTimeConcurrent(t *testing.T, s store.Store) {
	v := store.OneTime{Hash: Hash(t), Kind: "handoff", Payload: []byte("p"), ExpiresAt: t0.Add(time.Minute)}
	must(t, s.PutOneTime(ctx(t), v))
	errs := race(func(int) error {
		_, err := s.TakeOneTime(ctx(t), v.Hash, v.Kind, t0)
		return err
	})
	if wins, _ := tally(t, "take one-time value", errs, store.ErrNotFound); wins != 1 {
		t.Fatalf("%d callers took the value, want exactly 1", wins)
	}
}

// testOneTimeGetThenTakeConcurrent races callers that each peek the value,
// check it, then take it (the session's hand-over): every one may see it,
// exactly one spends it.
func testOneTimeGetThenTakeConcurrent(t *testing.T, s store.Store) {
	v := store.OneTime{Hash: Hash(t), Kind: "handoff", Payload: []byte("p"), ExpiresAt: t0.Add(time.Minute)}
	must(t, s.PutOneTime(ctx(t), v))
	errs := race(func(int) error {
		if _, err := s.GetOneTime(ctx(t), v.Hash, v.Kind, t0); err != nil {
			return err
		}
		_, err := s.TakeOneTime(ctx(t), v.Hash, v.Kind, t0)
		return err
	})
	if wins, _ := tally(t, "peek then take one-time value", errs, store.ErrNotFound); wins != 1 {
		t.Fatalf("%d callers took the value, want exactly 1", wins)
	}
}

func testRefreshConcurrent(t *testing.T, s store.Store) {
	sess := newSession(t, s)
	g, rt := newGrant(t, s, sess.ID)
	next := make([]store.RefreshToken, racers)
	for i := range next {
		next[i] = store.RefreshToken{Hash: Hash(t), CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	}
	errs := race(func(i int) error {
		_, err := s.RotateRefreshToken(ctx(t), rt.Hash, next[i], t0.Add(time.Second))
		return err
	})
	wins, counts := tally(t, "rotate", errs, store.ErrRefreshReused, store.ErrNotFound)
	if wins != 1 {
		t.Fatalf("%d callers rotated the token, want exactly 1 (errors %v)", wins, errs)
	}
	// Every loser came after the winner, so the first of them saw a spent
	// token and revoked the family; later ones may see it revoked.
	if counts[0] < 1 {
		t.Fatalf("no caller detected the reuse (errors %v)", errs)
	}
	got, err := s.GetGrant(ctx(t), g.ID)
	wantErr(t, "get grant", err, nil)
	if got.RevokedAt.IsZero() {
		t.Fatal("reuse left the family live")
	}
	for i, e := range errs {
		if e == nil {
			_, _, err := s.GetRefreshToken(ctx(t), next[i].Hash, t0)
			wantErr(t, "winner's new token after the family was revoked", err, store.ErrNotFound)
		}
	}
}

func testSessionConcurrentUpdate(t *testing.T, s store.Store) {
	sess := newSession(t, s)
	errs := race(func(i int) error {
		upd := sess
		upd.IDPTokens = []byte{byte(i)}
		_, err := s.UpdateSession(ctx(t), upd)
		return err
	})
	if wins, _ := tally(t, "update session", errs, store.ErrConflict); wins != 1 {
		t.Fatalf("%d callers updated version 1, want exactly 1", wins)
	}
	got, err := s.GetSession(ctx(t), sess.ID)
	wantErr(t, "get session", err, nil)
	wantEqual(t, "version", got.Version, int64(2))
}
