package storetest

import (
	"testing"
	"time"

	"github.com/mcpmesh/gateway/tokensvc/store"
)

func testDeleteExpired(t *testing.T, s store.Store) {
	gc := t0.Add(2 * time.Hour) // the collection's "now"
	dead, live := t0.Add(time.Hour), t0.Add(3*time.Hour)
	var wantDeleted int64

	// Clients: expired, live, never expiring.
	expired := store.Client{ID: ID(t, "c"), Kind: store.ClientDynamic, ExpiresAt: dead}
	liveC := store.Client{ID: ID(t, "c"), Kind: store.ClientDynamic, ExpiresAt: live}
	static := store.Client{ID: ID(t, "c"), Kind: store.ClientStatic}
	for _, c := range []store.Client{expired, liveC, static} {
		must(t, s.CreateClient(ctx(t), c))
	}
	wantDeleted++

	// Codes and one-time values.
	deadCode, liveCode := sampleCode(t), sampleCode(t)
	deadCode.ExpiresAt, liveCode.ExpiresAt = dead, live
	must(t, s.CreateAuthCode(ctx(t), deadCode))
	must(t, s.CreateAuthCode(ctx(t), liveCode))
	deadOT := store.OneTime{Hash: Hash(t), Kind: "k", ExpiresAt: dead}
	liveOT := store.OneTime{Hash: Hash(t), Kind: "k", ExpiresAt: live}
	must(t, s.PutOneTime(ctx(t), deadOT))
	must(t, s.PutOneTime(ctx(t), liveOT))
	wantDeleted += 2

	// Upstream tokens: expired, never expiring.
	must(t, s.PutUpstreamToken(ctx(t), store.UpstreamToken{Subject: "u", RouteID: "dead", ExpiresAt: dead}))
	must(t, s.PutUpstreamToken(ctx(t), store.UpstreamToken{Subject: "u", RouteID: "forever"}))
	wantDeleted++

	// Upstream client registrations: expired, never expiring.
	must(t, s.CreateUpstreamClient(ctx(t), store.UpstreamClient{Issuer: "https://as.example", RedirectURI: "dead", ExpiresAt: dead, CreatedAt: t0}))
	must(t, s.CreateUpstreamClient(ctx(t), store.UpstreamClient{Issuer: "https://as.example", RedirectURI: "forever", CreatedAt: t0}))
	wantDeleted++

	// Session A: cookie expiry passed, but a live grant holds it (refresh can
	// recreate it). Its used refresh token is live (reuse detection), one
	// refresh token and one access token are expired, its cookie is expired.
	sessA := store.Session{ID: ID(t, "sess"), CreatedAt: t0, ExpiresAt: dead}
	must(t, s.CreateSession(ctx(t), sessA))
	gA, rtA := newGrant(t, s, sessA.ID) // expires in 30 days
	rtA2 := store.RefreshToken{Hash: Hash(t), ExpiresAt: live}
	_, err := s.RotateRefreshToken(ctx(t), rtA.Hash, rtA2, t0)
	wantErr(t, "rotate", err, nil)
	rtA3 := store.RefreshToken{Hash: Hash(t), ExpiresAt: dead}
	_, err = s.RotateRefreshToken(ctx(t), rtA2.Hash, rtA3, t0)
	wantErr(t, "rotate", err, nil)
	wantDeleted++                   // rtA3
	atA := newAccessToken(t, s, gA) // expires t0+1h
	atALive := store.AccessToken{Hash: Hash(t), GrantID: gA.ID, SessionID: sessA.ID, ExpiresAt: live}
	must(t, s.CreateAccessToken(ctx(t), atALive))
	wantDeleted++ // atA
	cookieA := store.BrowserCookie{Hash: Hash(t), SessionID: sessA.ID, Host: "h", ExpiresAt: dead}
	must(t, s.CreateBrowserCookie(ctx(t), cookieA))
	wantDeleted++

	// Session B: expired and its only grant expired: session, grant, the
	// grant's refresh and access tokens (even unexpired ones) and the
	// session's cookie all go.
	sessB := store.Session{ID: ID(t, "sess"), CreatedAt: t0, ExpiresAt: dead}
	must(t, s.CreateSession(ctx(t), sessB))
	gB := store.Grant{ID: ID(t, "grant"), ClientID: "c", SessionID: sessB.ID, ExpiresAt: dead}
	must(t, s.CreateGrant(ctx(t), gB, store.RefreshToken{Hash: Hash(t), ExpiresAt: live}))
	must(t, s.CreateAccessToken(ctx(t), store.AccessToken{Hash: Hash(t), GrantID: gB.ID, ExpiresAt: live}))
	cookieB := store.BrowserCookie{Hash: Hash(t), SessionID: sessB.ID, Host: "h", ExpiresAt: live}
	must(t, s.CreateBrowserCookie(ctx(t), cookieB))
	wantDeleted += 5

	// Session C: expired and its grant revoked: no longer held.
	sessC := store.Session{ID: ID(t, "sess"), CreatedAt: t0, ExpiresAt: dead}
	must(t, s.CreateSession(ctx(t), sessC))
	gC, _ := newGrant(t, s, sessC.ID)
	must(t, s.RevokeGrant(ctx(t), gC.ID, t0))
	wantDeleted++ // the session; the revoked grant stays until it expires

	// Session D: live.
	sessD := newSession(t, s)

	n, err := s.DeleteExpired(ctx(t), gc)
	wantErr(t, "delete expired", err, nil)
	wantEqual(t, "rows deleted", n, wantDeleted)

	n, err = s.DeleteExpired(ctx(t), gc)
	wantErr(t, "delete expired again", err, nil)
	wantEqual(t, "rows deleted by a second run", n, int64(0))

	// What must have survived.
	for _, c := range []store.Client{liveC, static} {
		_, err = s.GetClient(ctx(t), c.ID, t0)
		wantErr(t, "live client "+c.ID, err, nil)
	}
	_, err = s.TakeAuthCode(ctx(t), liveCode.Hash, t0)
	wantErr(t, "live code", err, nil)
	_, err = s.TakeOneTime(ctx(t), liveOT.Hash, liveOT.Kind, t0)
	wantErr(t, "live one-time value", err, nil)
	_, err = s.GetUpstreamToken(ctx(t), "u", "forever", t0)
	wantErr(t, "upstream token without expiry", err, nil)
	_, err = s.GetUpstreamClient(ctx(t), "https://as.example", "forever", t0)
	wantErr(t, "upstream client without expiry", err, nil)
	_, err = s.GetSession(ctx(t), sessA.ID)
	wantErr(t, "expired session held by a live grant", err, nil)
	_, err = s.GetSession(ctx(t), sessD.ID)
	wantErr(t, "live session", err, nil)
	_, err = s.GetGrant(ctx(t), gC.ID)
	wantErr(t, "revoked but unexpired grant", err, nil)
	_, err = s.GetAccessToken(ctx(t), atALive.Hash, t0)
	wantErr(t, "live access token", err, nil)
	// The used refresh token is still there to detect its replay.
	_, err = s.RotateRefreshToken(ctx(t), rtA.Hash, store.RefreshToken{Hash: Hash(t), ExpiresAt: live}, gc)
	wantErr(t, "replay after collection", err, store.ErrRefreshReused)

	// What must be gone.
	_, err = s.GetClient(ctx(t), expired.ID, t0)
	wantErr(t, "expired client", err, store.ErrNotFound)
	_, err = s.TakeAuthCode(ctx(t), deadCode.Hash, t0)
	wantErr(t, "expired code", err, store.ErrNotFound)
	_, err = s.GetSession(ctx(t), sessB.ID)
	wantErr(t, "expired session", err, store.ErrNotFound)
	_, err = s.GetGrant(ctx(t), gB.ID)
	wantErr(t, "expired grant", err, store.ErrNotFound)
	wantErr(t, "cookie of collected session", s.DeleteBrowserCookie(ctx(t), cookieB.Hash), store.ErrNotFound)
	wantErr(t, "expired access token", s.DeleteAccessToken(ctx(t), atA.Hash), store.ErrNotFound)
}
