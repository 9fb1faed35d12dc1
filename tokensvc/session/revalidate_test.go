package session

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/shared/checkapi"
	"github.com/mcpmesh/gateway/tokensvc/idp"
	"github.com/mcpmesh/gateway/tokensvc/idp/idptest"
	"github.com/mcpmesh/gateway/tokensvc/oauth"
	"github.com/mcpmesh/gateway/tokensvc/secret"
	"github.com/mcpmesh/gateway/tokensvc/store"
)

// signedInSession signs alice in on the app host and returns her session.
func signedInSession(t *testing.T, e *env) store.Session {
	t.Helper()
	b := e.browser()
	b.signIn(appOrigin, "/", "alice")
	_, s, err := e.store.GetBrowserCookie(context.Background(), secret.Hash(b.cookie(appOrigin, checkapi.SessionCookie).Value), "app.example.com", e.clock.now())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRevalidate_RenewsSessionAndStoresRotatedRefreshToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := signedInSession(t, e)
	e.clock.add(2 * time.Hour) // the browser session has expired
	e.idp.RefreshIdentity = idp.Identity{Subject: "alice", Email: "alice@new.example.com", Name: "Alice N", Groups: []string{"eng", "admins"}, Claims: map[string]any{"sub": "alice", "dept": "ops"}}
	got, err := e.m.Revalidate(context.Background(), s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if e.idp.LastRefresh().RefreshToken != "rt-1" {
		t.Errorf("refresh used %q, want the stored rt-1", e.idp.LastRefresh().RefreshToken)
	}
	stored := mustSession(t, e.store, s.ID)
	if !stored.ExpiresAt.Equal(store.Time(e.clock.now().Add(time.Hour))) || !got.ExpiresAt.Equal(stored.ExpiresAt) {
		t.Errorf("expiry = %v (returned %v), want now + cookie_expiration", stored.ExpiresAt, got.ExpiresAt)
	}
	if stored.Email != "alice@new.example.com" || stored.Name != "Alice N" || len(stored.Groups) != 2 || !strings.Contains(string(stored.Claims), `"ops"`) {
		t.Errorf("claims not updated: %+v", stored)
	}
	if got.Version != stored.Version || stored.Version != s.Version+1 {
		t.Errorf("version returned %d stored %d, want %d", got.Version, stored.Version, s.Version+1)
	}
	toks, err := e.m.openTokens(stored)
	if err != nil || toks.RefreshToken != "rt-2" {
		t.Errorf("stored refresh token = %q (%v), want the rotated rt-2", toks.RefreshToken, err)
	}
}

func TestRevalidate_KeepsClaimsWhenProviderReturnsNoIdentity(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := signedInSession(t, e)
	if _, err := e.m.Revalidate(context.Background(), s.ID); err != nil {
		t.Fatal(err)
	}
	if stored := mustSession(t, e.store, s.ID); stored.Email != "alice@example.com" || stored.Subject != "alice" {
		t.Errorf("identity lost: %+v", stored)
	}
}

func TestRevalidate_RefusalRevokesSession(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		set  func(*idptest.Connector)
	}{
		{"invalid_grant", func(f *idptest.Connector) { f.RefreshErr = fmt.Errorf("refresh: %w: invalid_grant", idp.ErrRefused) }},
		{"unverifiable ID token", func(f *idptest.Connector) {
			f.RefreshErr = fmt.Errorf("refresh: %w: bad signature", idp.ErrInvalidResponse)
		}},
		{"another subject", func(f *idptest.Connector) { f.RefreshIdentity = idp.Identity{Subject: "mallory"} }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			s := signedInSession(t, e)
			ctx := context.Background()
			g := store.Grant{ID: "g1", ClientID: "c", SessionID: s.ID, Subject: "alice", ExpiresAt: e.clock.now().Add(time.Hour)}
			if err := e.store.CreateGrant(ctx, g, store.RefreshToken{Hash: secret.Hash("r"), ExpiresAt: g.ExpiresAt}); err != nil {
				t.Fatal(err)
			}
			tc.set(e.idp)
			_, err := e.m.Revalidate(ctx, s.ID)
			if !errors.Is(err, oauth.ErrIDPRefused) {
				t.Fatalf("err = %v, want oauth.ErrIDPRefused", err)
			}
			if _, err := e.store.GetSession(ctx, s.ID); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("session not revoked: %v", err)
			}
			if got, _ := e.store.GetGrant(ctx, "g1"); got.RevokedAt.IsZero() {
				t.Error("grant not revoked")
			}
			if _, err := e.m.Revalidate(ctx, s.ID); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("revalidating a revoked session: %v, want store.ErrNotFound", err)
			}
		})
	}
}

func TestRevalidate_TransientErrorKeepsSession(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := signedInSession(t, e)
	e.idp.RefreshErr = fmt.Errorf("refresh: %w: %w", idp.ErrUnavailable, errTransient)
	_, err := e.m.Revalidate(context.Background(), s.ID)
	if err == nil || errors.Is(err, oauth.ErrIDPRefused) {
		t.Fatalf("err = %v, want a transient error", err)
	}
	if stored := mustSession(t, e.store, s.ID); !stored.RevokedAt.IsZero() || stored.Version != s.Version {
		t.Error("transient failure changed the session")
	}
}

func TestRevalidate_UnknownSession(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if _, err := e.m.Revalidate(context.Background(), "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("err = %v, want store.ErrNotFound", err)
	}
}

func TestRevalidate_ConcurrentCallsSucceed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := signedInSession(t, e)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := e.m.Revalidate(context.Background(), s.ID)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	mustSession(t, e.store, s.ID)
}

func TestRevalidate_LostRaceWithAnotherReplicaIsNotARefusal(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := signedInSession(t, e)
	e.clock.add(2 * time.Hour)
	// While this replica refreshes, another one renews the session first and spends the
	// rotating refresh token, so the provider refuses this replica's attempt.
	e.idp.OnRefresh = func() {
		other := mustSession(t, e.store, s.ID)
		other.ExpiresAt = e.clock.now().Add(time.Hour)
		if _, err := e.store.UpdateSession(context.Background(), other); err != nil {
			t.Error(err)
		}
	}
	e.idp.RefreshErr = fmt.Errorf("refresh: %w: invalid_grant", idp.ErrRefused)
	got, err := e.m.Revalidate(context.Background(), s.ID)
	if err != nil {
		t.Fatalf("err = %v, want the other replica's renewal", err)
	}
	if got.Version != s.Version+1 || !e.clock.now().Before(got.ExpiresAt) {
		t.Errorf("returned %+v", got)
	}
	mustSession(t, e.store, s.ID) // not revoked
}
