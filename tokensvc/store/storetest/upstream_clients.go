package storetest

import (
	"sync"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/tokensvc/store"
)

func normUpstreamClient(c store.UpstreamClient) store.UpstreamClient {
	c.Sealed = normBytes(c.Sealed)
	c.ExpiresAt, c.CreatedAt = store.Time(c.ExpiresAt), store.Time(c.CreatedAt)
	return c
}

// testUpstreamClient checks the registrations at upstream authorization servers: one per
// (issuer, redirect URI), the first creation wins, expiry hides it, and a delete names the
// registration it removes by its creation time.
func testUpstreamClient(t *testing.T, s store.Store) {
	c := store.UpstreamClient{Issuer: "https://as.vendor.example", RedirectURI: "https://a.example.com/cb",
		Sealed: []byte("reg-1"), ExpiresAt: t0.Add(time.Hour), CreatedAt: t0}
	must(t, s.CreateUpstreamClient(ctx(t), c))
	other := store.UpstreamClient{Issuer: c.Issuer, RedirectURI: "https://b.example.com/cb", Sealed: []byte("reg-2"), CreatedAt: t0}
	must(t, s.CreateUpstreamClient(ctx(t), other))

	got, err := s.GetUpstreamClient(ctx(t), c.Issuer, c.RedirectURI, t0)
	wantErr(t, "get", err, nil)
	wantEqual(t, "registration", got, normUpstreamClient(c))
	_, err = s.GetUpstreamClient(ctx(t), c.Issuer, c.RedirectURI, c.ExpiresAt)
	wantErr(t, "get expired", err, store.ErrNotFound)
	got, err = s.GetUpstreamClient(ctx(t), other.Issuer, other.RedirectURI, t0.Add(1000*time.Hour))
	wantErr(t, "get without expiry", err, nil)
	wantEqual(t, "other host's registration", got, normUpstreamClient(other))
	_, err = s.GetUpstreamClient(ctx(t), "https://other.example", c.RedirectURI, t0)
	wantErr(t, "get at another issuer", err, store.ErrNotFound)

	dup := c
	dup.Sealed, dup.CreatedAt = []byte("reg-1b"), t0.Add(time.Second)
	wantErr(t, "create twice", s.CreateUpstreamClient(ctx(t), dup), store.ErrAlreadyExists)
	got, err = s.GetUpstreamClient(ctx(t), c.Issuer, c.RedirectURI, t0)
	wantErr(t, "get after refused create", err, nil)
	wantEqual(t, "first registration kept", got, normUpstreamClient(c))

	wantErr(t, "delete another creation", s.DeleteUpstreamClient(ctx(t), c.Issuer, c.RedirectURI, dup.CreatedAt), store.ErrNotFound)
	wantErr(t, "delete", s.DeleteUpstreamClient(ctx(t), c.Issuer, c.RedirectURI, c.CreatedAt), nil)
	_, err = s.GetUpstreamClient(ctx(t), c.Issuer, c.RedirectURI, t0)
	wantErr(t, "get deleted", err, store.ErrNotFound)
	wantErr(t, "delete deleted", s.DeleteUpstreamClient(ctx(t), c.Issuer, c.RedirectURI, c.CreatedAt), store.ErrNotFound)
	must(t, s.CreateUpstreamClient(ctx(t), dup))
	_, err = s.GetUpstreamClient(ctx(t), other.Issuer, other.RedirectURI, t0)
	wantErr(t, "other registration survives", err, nil)

	bad := []store.UpstreamClient{{RedirectURI: "x", CreatedAt: t0}, {Issuer: "x", CreatedAt: t0}}
	for _, b := range bad {
		if err := s.CreateUpstreamClient(ctx(t), b); err == nil {
			t.Errorf("registration %+v without issuer or redirect URI was stored", b)
		}
	}
}

// testUpstreamClientConcurrent checks that of replicas registering at once exactly one
// creation wins.
func testUpstreamClientConcurrent(t *testing.T, s store.Store) {
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.CreateUpstreamClient(ctx(t), store.UpstreamClient{Issuer: "https://as.example", RedirectURI: "https://a.example/cb",
				Sealed: []byte{byte(i)}, CreatedAt: t0})
		}()
	}
	wg.Wait()
	wins := 0
	for _, err := range errs {
		switch {
		case err == nil:
			wins++
		default:
			wantErr(t, "losing create", err, store.ErrAlreadyExists)
		}
	}
	if wins != 1 {
		t.Fatalf("%d creations won, want exactly 1", wins)
	}
}
