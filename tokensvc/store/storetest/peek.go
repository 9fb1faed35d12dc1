package storetest

import (
	"testing"
	"time"

	"github.com/mcpmesh/gateway/tokensvc/store"
)

// Check, then spend: GetAuthCode and GetOneTime let a caller verify what a
// single-use value is bound to before TakeAuthCode or TakeOneTime spends it.
// A look never consumes, and a look is never a way around expiry or kind.

func testAuthCodeGet(t *testing.T, s store.Store) {
	c := sampleCode(t)
	must(t, s.CreateAuthCode(ctx(t), c))

	for range 3 {
		got, err := s.GetAuthCode(ctx(t), c.Hash, t0)
		wantErr(t, "get code", err, nil)
		wantEqual(t, "code", got, normCode(c))
	}
	_, err := s.GetAuthCode(ctx(t), c.Hash, c.ExpiresAt)
	wantErr(t, "get code at expiry", err, store.ErrNotFound)
	_, err = s.GetAuthCode(ctx(t), Hash(t), t0)
	wantErr(t, "get unknown code", err, store.ErrNotFound)

	got, err := s.TakeAuthCode(ctx(t), c.Hash, t0)
	wantErr(t, "take after looks (none consumed it)", err, nil)
	wantEqual(t, "taken code", got, normCode(c))
	_, err = s.GetAuthCode(ctx(t), c.Hash, t0)
	wantErr(t, "get taken code", err, store.ErrNotFound)

	noExpiry := sampleCode(t)
	noExpiry.ExpiresAt = time.Time{}
	must(t, s.CreateAuthCode(ctx(t), noExpiry))
	_, err = s.GetAuthCode(ctx(t), noExpiry.Hash, t0)
	wantErr(t, "get code stored without expiry (fails closed)", err, store.ErrNotFound)
}

// Every racer looks first and then takes, as the token endpoint does: the look
// lets all of them through, the take still lets exactly one win.
func testAuthCodeGetThenTakeConcurrent(t *testing.T, s store.Store) {
	c := sampleCode(t)
	must(t, s.CreateAuthCode(ctx(t), c))
	errs := race(func(int) error {
		if _, err := s.GetAuthCode(ctx(t), c.Hash, t0); err != nil {
			return err
		}
		_, err := s.TakeAuthCode(ctx(t), c.Hash, t0)
		return err
	})
	if wins, _ := tally(t, "look then take code", errs, store.ErrNotFound); wins != 1 {
		t.Fatalf("%d callers took the code, want exactly 1", wins)
	}
}

func testOneTimeGet(t *testing.T, s store.Store) {
	v := store.OneTime{Hash: Hash(t), Kind: "consent", Payload: []byte(`{"sid":"s"}`), ExpiresAt: t0.Add(10 * time.Minute)}
	must(t, s.PutOneTime(ctx(t), v))

	got, err := s.GetOneTime(ctx(t), v.Hash, v.Kind, t0)
	wantErr(t, "get", err, nil)
	wantEqual(t, "one-time value", got, normOneTime(v))
	got.Payload[0] = 'X' // the caller's copy is its own
	got, err = s.GetOneTime(ctx(t), v.Hash, v.Kind, t0)
	wantErr(t, "get again", err, nil)
	wantEqual(t, "one-time value after the caller changed its copy", got, normOneTime(v))

	_, err = s.GetOneTime(ctx(t), v.Hash, "handoff", t0)
	wantErr(t, "get with another kind", err, store.ErrNotFound)
	_, err = s.GetOneTime(ctx(t), v.Hash, v.Kind, v.ExpiresAt)
	wantErr(t, "get at expiry", err, store.ErrNotFound)
	_, err = s.GetOneTime(ctx(t), Hash(t), v.Kind, t0)
	wantErr(t, "get unknown", err, store.ErrNotFound)

	got, err = s.TakeOneTime(ctx(t), v.Hash, v.Kind, t0)
	wantErr(t, "take after looks (none consumed it)", err, nil)
	wantEqual(t, "taken value", got, normOneTime(v))
	_, err = s.GetOneTime(ctx(t), v.Hash, v.Kind, t0)
	wantErr(t, "get taken value", err, store.ErrNotFound)
}
