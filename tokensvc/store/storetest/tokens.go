package storetest

import (
	"testing"
	"time"

	"github.com/mcpmesh/gateway/tokensvc/store"
)

func sampleCode(t testing.TB) store.AuthCode {
	return store.AuthCode{
		Hash:          Hash(t),
		ClientID:      "client-1",
		SessionID:     "sess-1",
		Subject:       "user-1",
		RedirectURI:   "http://127.0.0.1:53117/callback",
		CodeChallenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
		Scope:         "mcp",
		Resource:      "https://mcp.example.com/mcp",
		CreatedAt:     t0,
		ExpiresAt:     t0.Add(time.Minute),
	}
}

func testAuthCodeTake(t *testing.T, s store.Store) {
	c := sampleCode(t)
	must(t, s.CreateAuthCode(ctx(t), c))
	wantErr(t, "create duplicate code", s.CreateAuthCode(ctx(t), c), store.ErrAlreadyExists)

	got, err := s.TakeAuthCode(ctx(t), c.Hash, t0)
	wantErr(t, "take code", err, nil)
	wantEqual(t, "code", got, normCode(c))

	_, err = s.TakeAuthCode(ctx(t), c.Hash, t0)
	wantErr(t, "take code twice", err, store.ErrNotFound)
	_, err = s.TakeAuthCode(ctx(t), Hash(t), t0)
	wantErr(t, "take unknown code", err, store.ErrNotFound)
}

func testAuthCodeExpired(t *testing.T, s store.Store) {
	c := sampleCode(t)
	must(t, s.CreateAuthCode(ctx(t), c))
	_, err := s.TakeAuthCode(ctx(t), c.Hash, c.ExpiresAt)
	wantErr(t, "take code at expiry", err, store.ErrNotFound)
	_, err = s.TakeAuthCode(ctx(t), c.Hash, c.ExpiresAt.Add(-time.Microsecond))
	wantErr(t, "take code before expiry (an expired attempt must not have consumed it)", err, nil)

	noExpiry := sampleCode(t)
	noExpiry.ExpiresAt = time.Time{}
	must(t, s.CreateAuthCode(ctx(t), noExpiry))
	_, err = s.TakeAuthCode(ctx(t), noExpiry.Hash, t0)
	wantErr(t, "take code stored without expiry (fails closed)", err, store.ErrNotFound)
}

func testGrantCreate(t *testing.T, s store.Store) {
	sess := newSession(t, s)
	g, rt := newGrant(t, s, sess.ID)

	got, err := s.GetGrant(ctx(t), g.ID)
	wantErr(t, "get grant", err, nil)
	wantEqual(t, "grant", got, g)

	gotRT, gotG, err := s.GetRefreshToken(ctx(t), rt.Hash, t0)
	wantErr(t, "get refresh token", err, nil)
	wantEqual(t, "refresh token", gotRT, rt)
	wantEqual(t, "refresh token's grant", gotG, g)

	other := store.RefreshToken{Hash: Hash(t), CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	wantErr(t, "create grant with taken ID", s.CreateGrant(ctx(t), g, other), store.ErrAlreadyExists)
	g2 := g
	g2.ID = ID(t, "grant")
	wantErr(t, "create grant with taken refresh hash", s.CreateGrant(ctx(t), g2, rt), store.ErrAlreadyExists)
	_, err = s.GetGrant(ctx(t), g2.ID)
	wantErr(t, "grant whose refresh token was refused", err, store.ErrNotFound)

	// A grant outside any session (no session to check).
	g3 := g
	g3.ID, g3.SessionID = ID(t, "grant"), ""
	must(t, s.CreateGrant(ctx(t), g3, store.RefreshToken{Hash: Hash(t), CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}))

	_, err = s.GetGrant(ctx(t), "unknown")
	wantErr(t, "get unknown grant", err, store.ErrNotFound)
	_, _, err = s.GetRefreshToken(ctx(t), Hash(t), t0)
	wantErr(t, "get unknown refresh token", err, store.ErrNotFound)
}

func testGrantNeedsSession(t *testing.T, s store.Store) {
	g := store.Grant{ID: ID(t, "grant"), ClientID: "c", SessionID: "no-such-session", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	rt := store.RefreshToken{Hash: Hash(t), CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	wantErr(t, "create grant of unknown session", s.CreateGrant(ctx(t), g, rt), store.ErrNotFound)

	sess := newSession(t, s)
	must(t, s.RevokeSession(ctx(t), sess.ID, t0))
	g.SessionID = sess.ID
	wantErr(t, "create grant of revoked session", s.CreateGrant(ctx(t), g, rt), store.ErrNotFound)
	_, _, err := s.GetRefreshToken(ctx(t), rt.Hash, t0)
	wantErr(t, "refresh token of refused grant", err, store.ErrNotFound)
}

func testRefreshRotate(t *testing.T, s store.Store) {
	sess := newSession(t, s)
	g, rt := newGrant(t, s, sess.ID)

	now := t0.Add(10 * time.Minute)
	next := store.RefreshToken{Hash: Hash(t), GrantID: "ignored", CreatedAt: now, ExpiresAt: now.Add(24 * time.Hour)}
	got, err := s.RotateRefreshToken(ctx(t), rt.Hash, next, now)
	wantErr(t, "rotate", err, nil)
	wantEqual(t, "rotated grant", got, g)

	old, _, err := s.GetRefreshToken(ctx(t), rt.Hash, now)
	wantErr(t, "get spent refresh token", err, nil)
	wantEqual(t, "spent token's UsedAt", old.UsedAt, store.Time(now))

	gotNext, _, err := s.GetRefreshToken(ctx(t), next.Hash, now)
	wantErr(t, "get new refresh token", err, nil)
	next.GrantID = g.ID
	wantEqual(t, "new refresh token", gotNext, normRefresh(next))

	third := store.RefreshToken{Hash: Hash(t), CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	_, err = s.RotateRefreshToken(ctx(t), next.Hash, third, now.Add(time.Minute))
	wantErr(t, "rotate the new token", err, nil)
}

func testRefreshReuse(t *testing.T, s store.Store) {
	sess := newSession(t, s)
	g, rt := newGrant(t, s, sess.ID)
	at := newAccessToken(t, s, g)
	other, otherRT := newGrant(t, s, sess.ID) // another family of the same user
	otherAT := newAccessToken(t, s, other)

	now := t0.Add(time.Minute)
	next := store.RefreshToken{Hash: Hash(t), CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	_, err := s.RotateRefreshToken(ctx(t), rt.Hash, next, now)
	wantErr(t, "rotate", err, nil)
	at2 := newAccessToken(t, s, g)

	replay := store.RefreshToken{Hash: Hash(t), CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	_, err = s.RotateRefreshToken(ctx(t), rt.Hash, replay, now.Add(time.Second))
	wantErr(t, "rotate a spent token", err, store.ErrRefreshReused)

	gotG, err := s.GetGrant(ctx(t), g.ID)
	wantErr(t, "get grant", err, nil)
	wantEqual(t, "grant revoked at", gotG.RevokedAt, store.Time(now.Add(time.Second)))
	for name, h := range map[string][]byte{"original": rt.Hash, "rotated": next.Hash, "replayed": replay.Hash} {
		_, _, err = s.GetRefreshToken(ctx(t), h, now)
		wantErr(t, "get "+name+" refresh token of revoked family", err, store.ErrNotFound)
	}
	_, err = s.RotateRefreshToken(ctx(t), next.Hash, store.RefreshToken{Hash: Hash(t), ExpiresAt: now.Add(time.Hour)}, now)
	wantErr(t, "rotate the family's live token", err, store.ErrNotFound)
	_, err = s.RotateRefreshToken(ctx(t), rt.Hash, store.RefreshToken{Hash: Hash(t), ExpiresAt: now.Add(time.Hour)}, now)
	wantErr(t, "replay again", err, store.ErrNotFound)
	for _, h := range [][]byte{at.Hash, at2.Hash} {
		_, err = s.GetAccessToken(ctx(t), h, now)
		wantErr(t, "access token of revoked family", err, store.ErrNotFound)
	}

	// The other family is untouched.
	_, _, err = s.GetRefreshToken(ctx(t), otherRT.Hash, now)
	wantErr(t, "other family's refresh token", err, nil)
	_, err = s.GetAccessToken(ctx(t), otherAT.Hash, now)
	wantErr(t, "other family's access token", err, nil)
}

func testRefreshNotFound(t *testing.T, s store.Store) {
	sess := newSession(t, s)
	fresh := func() store.RefreshToken {
		return store.RefreshToken{Hash: Hash(t), CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	}

	// Token expired, grant live.
	_, rt := newGrant(t, s, sess.ID)
	_, _, err := s.GetRefreshToken(ctx(t), rt.Hash, rt.ExpiresAt)
	wantErr(t, "get expired refresh token", err, store.ErrNotFound)
	_, err = s.RotateRefreshToken(ctx(t), rt.Hash, fresh(), rt.ExpiresAt)
	wantErr(t, "rotate expired refresh token", err, store.ErrNotFound)

	// Grant expired, token live.
	g := store.Grant{ID: ID(t, "grant"), ClientID: "c", SessionID: sess.ID, CreatedAt: t0, ExpiresAt: t0.Add(time.Minute)}
	rt2 := fresh()
	must(t, s.CreateGrant(ctx(t), g, rt2))
	_, _, err = s.GetRefreshToken(ctx(t), rt2.Hash, g.ExpiresAt)
	wantErr(t, "get refresh token of expired grant", err, store.ErrNotFound)
	_, err = s.RotateRefreshToken(ctx(t), rt2.Hash, fresh(), g.ExpiresAt)
	wantErr(t, "rotate refresh token of expired grant", err, store.ErrNotFound)

	// Grant revoked.
	g3, rt3 := newGrant(t, s, sess.ID)
	must(t, s.RevokeGrant(ctx(t), g3.ID, t0))
	_, _, err = s.GetRefreshToken(ctx(t), rt3.Hash, t0)
	wantErr(t, "get refresh token of revoked grant", err, store.ErrNotFound)
	_, err = s.RotateRefreshToken(ctx(t), rt3.Hash, fresh(), t0)
	wantErr(t, "rotate refresh token of revoked grant", err, store.ErrNotFound)

	_, err = s.RotateRefreshToken(ctx(t), Hash(t), fresh(), t0)
	wantErr(t, "rotate unknown refresh token", err, store.ErrNotFound)
}

func testRefreshRotateDuplicate(t *testing.T, s store.Store) {
	sess := newSession(t, s)
	_, rt := newGrant(t, s, sess.ID)
	_, taken := newGrant(t, s, sess.ID)
	_, err := s.RotateRefreshToken(ctx(t), rt.Hash, store.RefreshToken{Hash: taken.Hash, ExpiresAt: t0.Add(time.Hour)}, t0)
	wantErr(t, "rotate into a taken hash", err, store.ErrAlreadyExists)
	got, _, err := s.GetRefreshToken(ctx(t), rt.Hash, t0)
	wantErr(t, "get old token", err, nil)
	if !got.UsedAt.IsZero() {
		t.Fatal("failed rotation spent the old token")
	}
	_, err = s.RotateRefreshToken(ctx(t), rt.Hash, store.RefreshToken{Hash: Hash(t), ExpiresAt: t0.Add(time.Hour)}, t0)
	wantErr(t, "rotate after failed rotation", err, nil)
}

func testGrantRevoke(t *testing.T, s store.Store) {
	sess := newSession(t, s)
	g, rt := newGrant(t, s, sess.ID)
	at := newAccessToken(t, s, g)

	wantErr(t, "revoke grant", s.RevokeGrant(ctx(t), g.ID, t0.Add(time.Minute)), nil)
	wantErr(t, "revoke grant again", s.RevokeGrant(ctx(t), g.ID, t0.Add(time.Hour)), nil)
	got, err := s.GetGrant(ctx(t), g.ID)
	wantErr(t, "get revoked grant", err, nil)
	wantEqual(t, "first RevokedAt kept", got.RevokedAt, store.Time(t0.Add(time.Minute)))

	_, _, err = s.GetRefreshToken(ctx(t), rt.Hash, t0)
	wantErr(t, "refresh token of revoked grant", err, store.ErrNotFound)
	_, err = s.GetAccessToken(ctx(t), at.Hash, t0)
	wantErr(t, "access token of revoked grant", err, store.ErrNotFound)
	// An access token minted by a rotation that raced the revocation.
	late := newAccessToken(t, s, g)
	_, err = s.GetAccessToken(ctx(t), late.Hash, t0)
	wantErr(t, "access token created after revocation", err, store.ErrNotFound)

	wantErr(t, "revoke unknown grant", s.RevokeGrant(ctx(t), "unknown", t0), store.ErrNotFound)
}

func testGrantsBySession(t *testing.T, s store.Store) {
	sess := newSession(t, s)
	otherSess := newSession(t, s)
	var want []store.Grant
	for i := range 3 {
		g := store.Grant{
			ID: ID(t, "grant"), ClientID: "c", SessionID: sess.ID,
			CreatedAt: t0.Add(time.Duration(3-i) * time.Second), ExpiresAt: t0.Add(time.Hour),
		}
		must(t, s.CreateGrant(ctx(t), g, store.RefreshToken{Hash: Hash(t), ExpiresAt: t0.Add(time.Hour)}))
		want = append([]store.Grant{normGrant(g)}, want...) // oldest first
	}
	other, otherRT := newGrant(t, s, otherSess.ID)

	got, err := s.ListGrantsBySession(ctx(t), sess.ID)
	wantErr(t, "list grants", err, nil)
	wantEqual(t, "grants of session", got, want)

	must(t, s.RevokeGrant(ctx(t), want[0].ID, t0))
	n, err := s.RevokeGrantsBySession(ctx(t), sess.ID, t0.Add(time.Minute))
	wantErr(t, "revoke grants of session", err, nil)
	wantEqual(t, "grants revoked", n, int64(2))

	got, err = s.ListGrantsBySession(ctx(t), sess.ID)
	wantErr(t, "list grants", err, nil)
	for i, g := range got {
		wantAt := store.Time(t0.Add(time.Minute))
		if i == 0 {
			wantAt = store.Time(t0)
		}
		wantEqual(t, "RevokedAt of "+g.ID, g.RevokedAt, wantAt)
	}
	_, _, err = s.GetRefreshToken(ctx(t), otherRT.Hash, t0)
	wantErr(t, "other session's grant", err, nil)
	list, err := s.ListGrantsBySession(ctx(t), otherSess.ID)
	wantErr(t, "list other session", err, nil)
	wantEqual(t, "other session's grants", list, []store.Grant{other})

	// Grants made outside a session are no session's: an empty ID (a
	// caller's slip) neither lists nor revokes them.
	loose := store.Grant{ID: ID(t, "grant"), ClientID: "c", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	must(t, s.CreateGrant(ctx(t), loose, store.RefreshToken{Hash: Hash(t), ExpiresAt: t0.Add(time.Hour)}))
	n, err = s.RevokeGrantsBySession(ctx(t), "", t0)
	wantErr(t, "revoke grants of empty session ID", err, nil)
	wantEqual(t, "grants revoked for empty session ID", n, int64(0))
	list, err = s.ListGrantsBySession(ctx(t), "")
	wantErr(t, "list empty session ID", err, nil)
	if len(list) != 0 {
		t.Fatalf("empty session ID lists %v", list)
	}
	if g, err := s.GetGrant(ctx(t), loose.ID); err != nil || !g.RevokedAt.IsZero() {
		t.Fatalf("grant outside a session after revoking empty session ID: %+v, %v", g, err)
	}

	list, err = s.ListGrantsBySession(ctx(t), "unknown")
	wantErr(t, "list unknown session", err, nil)
	if len(list) != 0 {
		t.Fatalf("unknown session has grants %v", list)
	}
}

func testAccessToken(t *testing.T, s store.Store) {
	at := store.AccessToken{
		Hash: Hash(t), ClientID: "c", Subject: "user-1", Scope: "mcp",
		CreatedAt: t0, ExpiresAt: t0.Add(time.Hour),
	}
	must(t, s.CreateAccessToken(ctx(t), at))
	wantErr(t, "create duplicate access token", s.CreateAccessToken(ctx(t), at), store.ErrAlreadyExists)

	got, err := s.GetAccessToken(ctx(t), at.Hash, t0)
	wantErr(t, "get access token", err, nil)
	wantEqual(t, "access token", got, normAccess(at))
	_, err = s.GetAccessToken(ctx(t), at.Hash, at.ExpiresAt.Add(-time.Microsecond))
	wantErr(t, "get access token just before expiry", err, nil)
	_, err = s.GetAccessToken(ctx(t), at.Hash, at.ExpiresAt)
	wantErr(t, "get access token at expiry", err, store.ErrNotFound)

	wantErr(t, "delete access token", s.DeleteAccessToken(ctx(t), at.Hash), nil)
	_, err = s.GetAccessToken(ctx(t), at.Hash, t0)
	wantErr(t, "get deleted access token", err, store.ErrNotFound)
	wantErr(t, "delete deleted access token", s.DeleteAccessToken(ctx(t), at.Hash), store.ErrNotFound)
	_, err = s.GetAccessToken(ctx(t), Hash(t), t0)
	wantErr(t, "get unknown access token", err, store.ErrNotFound)
}

func testAccessTokenJoined(t *testing.T, s store.Store) {
	sess := newSession(t, s)
	g, _ := newGrant(t, s, sess.ID)
	at := newAccessToken(t, s, g)
	_, err := s.GetAccessToken(ctx(t), at.Hash, t0)
	wantErr(t, "access token of live grant", err, nil)

	// Unknown grant or session.
	ghost := store.AccessToken{Hash: Hash(t), GrantID: "no-such-grant", ExpiresAt: t0.Add(time.Hour)}
	must(t, s.CreateAccessToken(ctx(t), ghost))
	_, err = s.GetAccessToken(ctx(t), ghost.Hash, t0)
	wantErr(t, "access token of unknown grant", err, store.ErrNotFound)
	ghost = store.AccessToken{Hash: Hash(t), SessionID: "no-such-session", ExpiresAt: t0.Add(time.Hour)}
	must(t, s.CreateAccessToken(ctx(t), ghost))
	_, err = s.GetAccessToken(ctx(t), ghost.Hash, t0)
	wantErr(t, "access token of unknown session", err, store.ErrNotFound)

	// Bound to a session only (the TE handed to an mcp.client backend): valid
	// past the session's cookie expiry, invalid once the session is revoked.
	sessOnly := store.AccessToken{Hash: Hash(t), SessionID: sess.ID, Subject: sess.Subject, ExpiresAt: sess.ExpiresAt.Add(time.Hour)}
	must(t, s.CreateAccessToken(ctx(t), sessOnly))
	_, err = s.GetAccessToken(ctx(t), sessOnly.Hash, sess.ExpiresAt.Add(time.Minute))
	wantErr(t, "session-bound access token after cookie expiry", err, nil)

	// Grant expired.
	short := store.Grant{ID: ID(t, "grant"), ClientID: "c", SessionID: sess.ID, CreatedAt: t0, ExpiresAt: t0.Add(time.Minute)}
	must(t, s.CreateGrant(ctx(t), short, store.RefreshToken{Hash: Hash(t), ExpiresAt: t0.Add(time.Minute)}))
	at2 := newAccessToken(t, s, normGrant(short))
	_, err = s.GetAccessToken(ctx(t), at2.Hash, short.ExpiresAt)
	wantErr(t, "access token of expired grant", err, store.ErrNotFound)

	must(t, s.RevokeSession(ctx(t), sess.ID, t0))
	_, err = s.GetAccessToken(ctx(t), sessOnly.Hash, t0)
	wantErr(t, "session-bound access token after sign-out", err, store.ErrNotFound)
	_, err = s.GetAccessToken(ctx(t), at.Hash, t0)
	wantErr(t, "grant access token after sign-out", err, store.ErrNotFound)
}
