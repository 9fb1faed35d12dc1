package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/tokensvc/store"
)

func testSessionRoundTrip(t *testing.T, s store.Store) {
	sess := newSession(t, s)
	got, err := s.GetSession(ctx(t), sess.ID)
	wantErr(t, "get session", err, nil)
	wantEqual(t, "session", got, sess)

	dup := sess
	dup.Email = "mallory@example.com"
	wantErr(t, "create duplicate session", s.CreateSession(ctx(t), dup), store.ErrAlreadyExists)

	// Version given by the caller is ignored on create.
	bare := store.Session{ID: ID(t, "sess"), Version: 42, ExpiresAt: t0}
	must(t, s.CreateSession(ctx(t), bare))
	got, err = s.GetSession(ctx(t), bare.ID)
	wantErr(t, "get bare session (already expired: still returned)", err, nil)
	wantEqual(t, "bare session", got, normSession(bare, 1))

	_, err = s.GetSession(ctx(t), "unknown")
	wantErr(t, "get unknown session", err, store.ErrNotFound)
}

func testSessionUpdate(t *testing.T, s store.Store) {
	sess := newSession(t, s)
	upd := sess
	upd.Subject, upd.CreatedAt = "someone-else", t0.Add(time.Hour) // immutable: ignored
	upd.Email, upd.Name, upd.Groups = "ada@new.example.com", "Ada L.", []string{"eng"}
	upd.Claims, upd.IDPTokens = []byte(`{"sub":"user-1"}`), []byte("rotated-sealed")
	upd.IDPTokenExpiry, upd.ExpiresAt = t0.Add(2*time.Hour), t0.Add(30*time.Hour)
	v, err := s.UpdateSession(ctx(t), upd)
	wantErr(t, "update session", err, nil)
	wantEqual(t, "new version", v, int64(2))

	got, err := s.GetSession(ctx(t), sess.ID)
	wantErr(t, "get session", err, nil)
	want := normSession(upd, 2)
	want.Subject, want.CreatedAt = sess.Subject, sess.CreatedAt
	wantEqual(t, "updated session", got, want)

	_, err = s.UpdateSession(ctx(t), upd) // still version 1
	wantErr(t, "update with stale version", err, store.ErrConflict)

	got.Groups = nil
	_, err = s.UpdateSession(ctx(t), got)
	wantErr(t, "update with current version", err, nil)
	got, err = s.GetSession(ctx(t), sess.ID)
	wantErr(t, "get session", err, nil)
	if len(got.Groups) != 0 || got.Version != 3 {
		t.Fatalf("groups %v version %d, want none and 3", got.Groups, got.Version)
	}

	must(t, s.RevokeSession(ctx(t), sess.ID, t0))
	_, err = s.UpdateSession(ctx(t), got)
	wantErr(t, "update revoked session", err, store.ErrNotFound)
	_, err = s.UpdateSession(ctx(t), store.Session{ID: "unknown", Version: 1})
	wantErr(t, "update unknown session", err, store.ErrNotFound)
}

func testSessionRevoke(t *testing.T, s store.Store) {
	sess := newSession(t, s)
	other := newSession(t, s)
	g, rt := newGrant(t, s, sess.ID)
	at := newAccessToken(t, s, g)
	cookie := store.BrowserCookie{Hash: Hash(t), SessionID: sess.ID, Host: "mcp.example.com", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	must(t, s.CreateBrowserCookie(ctx(t), cookie))
	otherCookie := store.BrowserCookie{Hash: Hash(t), SessionID: other.ID, Host: "mcp.example.com", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	must(t, s.CreateBrowserCookie(ctx(t), otherCookie))

	wantErr(t, "revoke session", s.RevokeSession(ctx(t), sess.ID, t0.Add(time.Minute)), nil)
	wantErr(t, "revoke session again", s.RevokeSession(ctx(t), sess.ID, t0.Add(time.Hour)), nil)

	_, err := s.GetSession(ctx(t), sess.ID)
	wantErr(t, "get revoked session", err, store.ErrNotFound)
	gotG, err := s.GetGrant(ctx(t), g.ID)
	wantErr(t, "get grant", err, nil)
	wantEqual(t, "grant revoked with session", gotG.RevokedAt, store.Time(t0.Add(time.Minute)))
	_, err = s.RotateRefreshToken(ctx(t), rt.Hash, store.RefreshToken{Hash: Hash(t), ExpiresAt: t0.Add(time.Hour)}, t0)
	wantErr(t, "refresh after sign-out", err, store.ErrNotFound)
	_, err = s.GetAccessToken(ctx(t), at.Hash, t0)
	wantErr(t, "access token after sign-out", err, store.ErrNotFound)
	_, _, err = s.GetBrowserCookie(ctx(t), cookie.Hash, cookie.Host, t0)
	wantErr(t, "cookie after sign-out", err, store.ErrNotFound)
	wantErr(t, "cookie deleted by sign-out", s.DeleteBrowserCookie(ctx(t), cookie.Hash), store.ErrNotFound)

	_, _, err = s.GetBrowserCookie(ctx(t), otherCookie.Hash, otherCookie.Host, t0)
	wantErr(t, "other session's cookie", err, nil)
	wantErr(t, "revoke unknown session", s.RevokeSession(ctx(t), "unknown", t0), store.ErrNotFound)
}

func testBrowserCookie(t *testing.T, s store.Store) {
	sess := newSession(t, s)
	c := store.BrowserCookie{Hash: Hash(t), SessionID: sess.ID, Host: "app.example.com", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	must(t, s.CreateBrowserCookie(ctx(t), c))
	wantErr(t, "create duplicate cookie", s.CreateBrowserCookie(ctx(t), c), store.ErrAlreadyExists)

	gotC, gotS, err := s.GetBrowserCookie(ctx(t), c.Hash, c.Host, t0)
	wantErr(t, "get cookie", err, nil)
	wantEqual(t, "cookie", gotC, normCookie(c))
	wantEqual(t, "cookie's session", gotS, sess)

	_, _, err = s.GetBrowserCookie(ctx(t), c.Hash, "other.example.com", t0)
	wantErr(t, "cookie at another host", err, store.ErrNotFound)
	_, _, err = s.GetBrowserCookie(ctx(t), c.Hash, c.Host, c.ExpiresAt)
	wantErr(t, "expired cookie", err, store.ErrNotFound)

	// Cookie outliving its session.
	long := store.BrowserCookie{Hash: Hash(t), SessionID: sess.ID, Host: c.Host, ExpiresAt: sess.ExpiresAt.Add(time.Hour)}
	must(t, s.CreateBrowserCookie(ctx(t), long))
	_, _, err = s.GetBrowserCookie(ctx(t), long.Hash, long.Host, sess.ExpiresAt)
	wantErr(t, "cookie of expired session", err, store.ErrNotFound)

	orphan := store.BrowserCookie{Hash: Hash(t), SessionID: "no-such-session", Host: c.Host, ExpiresAt: t0.Add(time.Hour)}
	must(t, s.CreateBrowserCookie(ctx(t), orphan))
	_, _, err = s.GetBrowserCookie(ctx(t), orphan.Hash, orphan.Host, t0)
	wantErr(t, "cookie of unknown session", err, store.ErrNotFound)

	wantErr(t, "delete cookie", s.DeleteBrowserCookie(ctx(t), c.Hash), nil)
	_, _, err = s.GetBrowserCookie(ctx(t), c.Hash, c.Host, t0)
	wantErr(t, "get deleted cookie", err, store.ErrNotFound)
	wantErr(t, "delete deleted cookie", s.DeleteBrowserCookie(ctx(t), c.Hash), store.ErrNotFound)
}

func testUpstreamToken(t *testing.T, s store.Store) {
	u := store.UpstreamToken{Subject: "user-1", RouteID: "github", Sealed: []byte("sealed-1"), ExpiresAt: t0.Add(time.Hour), UpdatedAt: t0}
	must(t, s.PutUpstreamToken(ctx(t), u))
	other := store.UpstreamToken{Subject: "user-2", RouteID: "github", Sealed: []byte("sealed-2"), UpdatedAt: t0}
	must(t, s.PutUpstreamToken(ctx(t), other))

	got, err := s.GetUpstreamToken(ctx(t), u.Subject, u.RouteID, t0)
	wantErr(t, "get upstream token", err, nil)
	wantEqual(t, "upstream token", got, normUpstream(u))
	_, err = s.GetUpstreamToken(ctx(t), u.Subject, u.RouteID, u.ExpiresAt)
	wantErr(t, "get expired upstream token", err, store.ErrNotFound)
	got, err = s.GetUpstreamToken(ctx(t), other.Subject, other.RouteID, t0.Add(1000*time.Hour))
	wantErr(t, "get upstream token without expiry", err, nil)
	wantEqual(t, "other user's token", got, normUpstream(other))
	_, err = s.GetUpstreamToken(ctx(t), u.Subject, "gitlab", t0)
	wantErr(t, "get token of another route", err, store.ErrNotFound)

	u2 := store.UpstreamToken{Subject: u.Subject, RouteID: u.RouteID, Sealed: []byte("sealed-1b"), UpdatedAt: t0.Add(time.Minute)}
	must(t, s.PutUpstreamToken(ctx(t), u2))
	got, err = s.GetUpstreamToken(ctx(t), u.Subject, u.RouteID, t0.Add(2*time.Hour))
	wantErr(t, "get replaced upstream token", err, nil)
	wantEqual(t, "replaced upstream token", got, normUpstream(u2))

	wantErr(t, "delete upstream token", s.DeleteUpstreamToken(ctx(t), u.Subject, u.RouteID), nil)
	_, err = s.GetUpstreamToken(ctx(t), u.Subject, u.RouteID, t0)
	wantErr(t, "get deleted upstream token", err, store.ErrNotFound)
	wantErr(t, "delete deleted upstream token", s.DeleteUpstreamToken(ctx(t), u.Subject, u.RouteID), store.ErrNotFound)
	_, err = s.GetUpstreamToken(ctx(t), other.Subject, other.RouteID, t0)
	wantErr(t, "other user's token survives", err, nil)
}

func testOneTime(t *testing.T, s store.Store) {
	v := store.OneTime{Hash: Hash(t), Kind: "signin-state", Payload: []byte(`{"return":"/x"}`), ExpiresAt: t0.Add(10 * time.Minute)}
	must(t, s.PutOneTime(ctx(t), v))
	wantErr(t, "put duplicate one-time value", s.PutOneTime(ctx(t), v), store.ErrAlreadyExists)

	_, err := s.TakeOneTime(ctx(t), v.Hash, "consent", t0)
	wantErr(t, "take with another kind", err, store.ErrNotFound)
	_, err = s.TakeOneTime(ctx(t), v.Hash, v.Kind, v.ExpiresAt)
	wantErr(t, "take at expiry", err, store.ErrNotFound)
	got, err := s.TakeOneTime(ctx(t), v.Hash, v.Kind, t0)
	wantErr(t, "take (neither failed attempt consumed it)", err, nil)
	wantEqual(t, "one-time value", got, normOneTime(v))
	_, err = s.TakeOneTime(ctx(t), v.Hash, v.Kind, t0)
	wantErr(t, "take twice", err, store.ErrNotFound)
	_, err = s.TakeOneTime(ctx(t), Hash(t), v.Kind, t0)
	wantErr(t, "take unknown", err, store.ErrNotFound)

	empty := store.OneTime{Hash: Hash(t), Kind: "handoff", ExpiresAt: t0.Add(time.Minute)}
	must(t, s.PutOneTime(ctx(t), empty))
	got, err = s.TakeOneTime(ctx(t), empty.Hash, empty.Kind, t0)
	wantErr(t, "take empty payload", err, nil)
	wantEqual(t, "empty payload", got, normOneTime(empty))
}

// sessionCounter is the optional method the token service's live-sessions gauge uses.
type sessionCounter interface {
	CountLiveSessions(ctx context.Context, now time.Time) (int64, error)
}

// testCountLiveSessions: sessions neither revoked nor expired at now are counted. A store
// without CountLiveSessions skips it.
func testCountLiveSessions(t *testing.T, s store.Store) {
	c, ok := s.(sessionCounter)
	if !ok {
		t.Skip("the store does not count sessions")
	}
	count := func(at time.Time) int64 {
		t.Helper()
		n, err := c.CountLiveSessions(ctx(t), at)
		must(t, err)
		return n
	}
	if n := count(t0); n != 0 {
		t.Fatalf("empty store: %d live sessions", n)
	}
	a := newSession(t, s) // expires at t0+14h
	newSession(t, s)
	must(t, s.CreateSession(ctx(t), store.Session{ID: ID(t, "sess"), CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}))
	if n := count(t0); n != 3 {
		t.Errorf("three live sessions: counted %d", n)
	}
	if n := count(t0.Add(2 * time.Hour)); n != 2 {
		t.Errorf("one expired: counted %d, want 2", n)
	}
	must(t, s.RevokeSession(ctx(t), a.ID, t0))
	if n := count(t0); n != 2 {
		t.Errorf("one revoked: counted %d, want 2", n)
	}
}
