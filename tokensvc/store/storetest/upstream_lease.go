package storetest

import (
	"testing"
	"time"

	"github.com/mcpmesh/gateway/tokensvc/store"
)

// testUpstreamLease checks the refresh lease of an Internal Token: one holder
// at a time while the lease is live, replace and release only by the holder,
// and a put or delete ending the lease.
func testUpstreamLease(t *testing.T, s store.Store) {
	u := store.UpstreamToken{Subject: "user-1", RouteID: "r", Sealed: []byte("v1"), ExpiresAt: t0.Add(time.Hour), UpdatedAt: t0}
	must(t, s.PutUpstreamToken(ctx(t), u))
	until := t0.Add(30 * time.Second)

	_, err := s.LeaseUpstreamToken(ctx(t), "user-1", "other-route", "a", until, t0)
	wantErr(t, "lease unknown token", err, store.ErrNotFound)
	_, err = s.LeaseUpstreamToken(ctx(t), "user-1", "r", "a", until, u.ExpiresAt)
	wantErr(t, "lease expired record", err, store.ErrNotFound)

	got, err := s.LeaseUpstreamToken(ctx(t), "user-1", "r", "a", until, t0)
	wantErr(t, "lease", err, nil)
	wantEqual(t, "leased token", got, normUpstream(u))
	_, err = s.LeaseUpstreamToken(ctx(t), "user-1", "r", "b", until, t0.Add(time.Second))
	wantErr(t, "lease held by another", err, store.ErrConflict)
	_, err = s.LeaseUpstreamToken(ctx(t), "user-1", "r", "a", until.Add(time.Second), t0.Add(time.Second))
	wantErr(t, "holder renews its lease", err, nil)

	// Only the holder replaces or releases.
	next := store.UpstreamToken{Subject: "user-1", RouteID: "r", Sealed: []byte("v2"), ExpiresAt: t0.Add(2 * time.Hour), UpdatedAt: t0.Add(time.Minute)}
	wantErr(t, "replace by non-holder", s.ReplaceLeasedUpstreamToken(ctx(t), next, "b"), store.ErrConflict)
	wantErr(t, "release by non-holder", s.ReleaseUpstreamLease(ctx(t), "user-1", "r", "b", false), store.ErrConflict)
	wantErr(t, "remove by non-holder", s.ReleaseUpstreamLease(ctx(t), "user-1", "r", "b", true), store.ErrConflict)
	got, err = s.GetUpstreamToken(ctx(t), "user-1", "r", t0)
	wantErr(t, "get after refused writes", err, nil)
	wantEqual(t, "token after refused writes", got, normUpstream(u))

	wantErr(t, "replace by holder", s.ReplaceLeasedUpstreamToken(ctx(t), next, "a"), nil)
	got, err = s.GetUpstreamToken(ctx(t), "user-1", "r", t0)
	wantErr(t, "get replaced", err, nil)
	wantEqual(t, "replaced token", got, normUpstream(next))
	// The replace ended the lease: a second replace by the old holder fails, another may lease.
	wantErr(t, "replace after lease ended", s.ReplaceLeasedUpstreamToken(ctx(t), next, "a"), store.ErrConflict)
	_, err = s.LeaseUpstreamToken(ctx(t), "user-1", "r", "b", until, t0.Add(2*time.Second))
	wantErr(t, "lease after replace", err, nil)

	// A lease that ran out can be taken over; the old holder then holds nothing.
	_, err = s.LeaseUpstreamToken(ctx(t), "user-1", "r", "c", until.Add(time.Minute), until)
	wantErr(t, "take over an expired lease", err, nil)
	wantErr(t, "replace by the holder that lost its lease", s.ReplaceLeasedUpstreamToken(ctx(t), next, "b"), store.ErrConflict)
	wantErr(t, "release by holder", s.ReleaseUpstreamLease(ctx(t), "user-1", "r", "c", false), nil)
	got, err = s.GetUpstreamToken(ctx(t), "user-1", "r", t0)
	wantErr(t, "get after release", err, nil)
	wantEqual(t, "token after release", got, normUpstream(next))

	// A put (a new connect) ends the lease: the refresh that held it cannot overwrite it.
	_, err = s.LeaseUpstreamToken(ctx(t), "user-1", "r", "d", until, t0)
	wantErr(t, "lease before put", err, nil)
	fresh := store.UpstreamToken{Subject: "user-1", RouteID: "r", Sealed: []byte("v3"), UpdatedAt: t0.Add(2 * time.Minute)}
	must(t, s.PutUpstreamToken(ctx(t), fresh))
	wantErr(t, "replace after put", s.ReplaceLeasedUpstreamToken(ctx(t), next, "d"), store.ErrConflict)
	_, err = s.LeaseUpstreamToken(ctx(t), "user-1", "r", "e", until, t0)
	wantErr(t, "lease after put", err, nil)

	// Remove deletes the token; a holder whose token was deleted meanwhile gets ErrNotFound.
	wantErr(t, "remove by holder", s.ReleaseUpstreamLease(ctx(t), "user-1", "r", "e", true), nil)
	_, err = s.GetUpstreamToken(ctx(t), "user-1", "r", t0)
	wantErr(t, "get removed", err, store.ErrNotFound)
	wantErr(t, "release of removed token", s.ReleaseUpstreamLease(ctx(t), "user-1", "r", "e", false), store.ErrNotFound)
	must(t, s.PutUpstreamToken(ctx(t), u))
	_, err = s.LeaseUpstreamToken(ctx(t), "user-1", "r", "f", until, t0)
	wantErr(t, "lease before delete", err, nil)
	must(t, s.DeleteUpstreamToken(ctx(t), "user-1", "r"))
	wantErr(t, "replace of deleted token", s.ReplaceLeasedUpstreamToken(ctx(t), next, "f"), store.ErrNotFound)

	// Leases are per (subject, route): another user's token is unaffected.
	other := store.UpstreamToken{Subject: "user-2", RouteID: "r", Sealed: []byte("w"), UpdatedAt: t0}
	must(t, s.PutUpstreamToken(ctx(t), other))
	must(t, s.PutUpstreamToken(ctx(t), u))
	_, err = s.LeaseUpstreamToken(ctx(t), "user-1", "r", "g", until, t0)
	wantErr(t, "lease user-1", err, nil)
	_, err = s.LeaseUpstreamToken(ctx(t), "user-2", "r", "h", until, t0)
	wantErr(t, "lease user-2 while user-1 is leased", err, nil)
}

// testUpstreamLeaseConcurrent races holders for one lease: exactly one wins.
func testUpstreamLeaseConcurrent(t *testing.T, s store.Store) {
	u := store.UpstreamToken{Subject: "user-1", RouteID: "r", Sealed: []byte("v1"), UpdatedAt: t0}
	must(t, s.PutUpstreamToken(ctx(t), u))
	errs := race(func(i int) error {
		_, err := s.LeaseUpstreamToken(ctx(t), "user-1", "r", ID(t, "holder"), t0.Add(time.Minute), t0)
		return err
	})
	if wins, counts := tally(t, "concurrent lease", errs, store.ErrConflict); wins != 1 || counts[0] != racers-1 {
		t.Errorf("concurrent lease: %d won, %d conflicts; want exactly one winner", wins, counts[0])
	}
}
