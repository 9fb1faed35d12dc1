package storetest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/tokensvc/store"
)

// t0 is the suite's "now": deliberately not UTC and with nanoseconds, so a
// backend that drops the zone or truncates precision wrongly is caught.
var t0 = time.Date(2031, 5, 6, 7, 8, 9, 123456789, time.FixedZone("UTC+2", 2*3600))

// Run runs the conformance suite. newStore must return a new, empty store
// each time it is called, isolated from every other one it returned, so
// subtests can run in parallel; it registers its own cleanup with t.
func Run(t *testing.T, newStore func(t *testing.T) store.Store) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"Client_RoundTrip", testClientRoundTrip},
		{"Client_Duplicate", testClientDuplicate},
		{"Client_ExpiredIsNotFound", testClientExpired},
		{"Client_TouchRecordsUseAndExtendsExpiry", testClientTouch},
		{"Client_Delete", testClientDelete},
		{"Client_ReturnedCopyIsIndependent", testClientCopy},
		{"Record_InvalidIsRefused", testInvalidRecords},
		{"AuthCode_TakeIsSingleUse", testAuthCodeTake},
		{"AuthCode_ExpiredIsNotFound", testAuthCodeExpired},
		{"AuthCode_ConcurrentTakeExactlyOneWins", testAuthCodeConcurrent},
		{"AuthCode_GetDoesNotConsume", testAuthCodeGet},
		{"AuthCode_GetThenConcurrentTakeExactlyOneWins", testAuthCodeGetThenTakeConcurrent},
		{"Grant_CreateAndGetRefreshToken", testGrantCreate},
		{"Grant_CreateNeedsLiveSession", testGrantNeedsSession},
		{"Refresh_RotateSpendsOldIssuesNew", testRefreshRotate},
		{"Refresh_ReuseRevokesFamily", testRefreshReuse},
		{"Refresh_ExpiredOrRevokedIsNotFound", testRefreshNotFound},
		{"Refresh_RotateToTakenHashLeavesOldUnspent", testRefreshRotateDuplicate},
		{"Refresh_ConcurrentRotateExactlyOneWins", testRefreshConcurrent},
		{"Refresh_ReuseIntervalGrantsSameSuccessorOnly", testRefreshReuseInterval},
		{"Refresh_ConcurrentRotateWithinIntervalLeavesOneSuccessor", testRefreshConcurrentWithinInterval},
		{"Grant_RevokeKillsTokens", testGrantRevoke},
		{"Grant_ListAndRevokeBySession", testGrantsBySession},
		{"AccessToken_RoundTripAndExpiry", testAccessToken},
		{"AccessToken_InvalidWithDeadGrantOrSession", testAccessTokenJoined},
		{"Session_RoundTripIncludingExpired", testSessionRoundTrip},
		{"Session_UpdateIsOptimistic", testSessionUpdate},
		{"Session_ConcurrentUpdateExactlyOneWins", testSessionConcurrentUpdate},
		{"Session_RevokeEndsEverythingDerived", testSessionRevoke},
		{"Session_CountLiveSessions", testCountLiveSessions},
		{"BrowserCookie_ValidOnlyWithSessionAndHost", testBrowserCookie},
		{"UpstreamToken_PutGetDelete", testUpstreamToken},
		{"UpstreamLease_OneHolderReplacesOrReleases", testUpstreamLease},
		{"UpstreamLease_ConcurrentLeaseExactlyOneWins", testUpstreamLeaseConcurrent},
		{"UpstreamClient_OnePerIssuerAndRedirectURI", testUpstreamClient},
		{"UpstreamClient_ConcurrentCreateExactlyOneWins", testUpstreamClientConcurrent},
		{"OneTime_TakeIsSingleUseAndKindBound", testOneTime},
		{"OneTime_ConcurrentTakeExactlyOneWins", testOneTimeConcurrent},
		{"OneTime_GetDoesNotConsumeAndIsKindBound", testOneTimeGet},
		{"OneTime_ConcurrentGetThenTakeExactlyOneWins", testOneTimeGetThenTakeConcurrent},
		{"DeleteExpired_CollectsOnlyGarbage", testDeleteExpired},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newStore(t))
		})
	}
}

// Hash returns a fresh random 32-byte value, as a caller's SHA-256 of a
// random token would be.
func Hash(tb testing.TB) []byte {
	tb.Helper()
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		tb.Fatal(err)
	}
	h := sha256.Sum256(b[:])
	return h[:]
}

// ID returns a fresh random identifier with the given prefix.
func ID(tb testing.TB, prefix string) string {
	return fmt.Sprintf("%s-%x", prefix, Hash(tb)[:8])
}

func ctx(t testing.TB) context.Context { return t.Context() }

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// wantErr fails t unless err wraps target (nil target: err must be nil).
func wantErr(t testing.TB, what string, err, target error) {
	t.Helper()
	switch {
	case target == nil && err != nil:
		t.Fatalf("%s: unexpected error %v", what, err)
	case target != nil && !errors.Is(err, target):
		t.Fatalf("%s: error = %v, want %v", what, err, target)
	}
}

func wantEqual[T any](t testing.TB, what string, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\n got  %+v\n want %+v", what, got, want)
	}
}

// newSession stores a live session and returns it as stored.
func newSession(t testing.TB, s store.Store) store.Session {
	t.Helper()
	sess := store.Session{
		ID:             ID(t, "sess"),
		Subject:        "user-1",
		Email:          "ada@example.com",
		Name:           "Ada",
		Groups:         []string{"eng", "admins"},
		Claims:         []byte(`{"sub":"user-1","hd":"example.com"}`),
		IDPTokens:      []byte{0, 1, 2, 0xff, 0xfe},
		IDPTokenExpiry: t0.Add(time.Hour),
		CreatedAt:      t0,
		ExpiresAt:      t0.Add(14 * time.Hour),
	}
	must(t, s.CreateSession(ctx(t), sess))
	return normSession(sess, 1)
}

// newGrant stores a live grant of sessionID with a first refresh token.
func newGrant(t testing.TB, s store.Store, sessionID string) (store.Grant, store.RefreshToken) {
	t.Helper()
	g := store.Grant{
		ID:        ID(t, "grant"),
		ClientID:  "client-1",
		SessionID: sessionID,
		Subject:   "user-1",
		Scope:     "mcp offline_access",
		Resource:  "https://mcp.example.com/mcp",
		CreatedAt: t0,
		ExpiresAt: t0.Add(30 * 24 * time.Hour),
	}
	rt := store.RefreshToken{Hash: Hash(t), CreatedAt: t0, ExpiresAt: t0.Add(30 * 24 * time.Hour)}
	must(t, s.CreateGrant(ctx(t), g, rt))
	rt.GrantID = g.ID
	return normGrant(g), normRefresh(rt)
}

// newAccessToken stores a live access token of the grant.
func newAccessToken(t testing.TB, s store.Store, g store.Grant) store.AccessToken {
	t.Helper()
	at := store.AccessToken{
		Hash:      Hash(t),
		GrantID:   g.ID,
		ClientID:  g.ClientID,
		SessionID: g.SessionID,
		Subject:   g.Subject,
		Scope:     g.Scope,
		Resource:  g.Resource,
		CreatedAt: t0,
		ExpiresAt: t0.Add(time.Hour),
	}
	must(t, s.CreateAccessToken(ctx(t), at))
	return normAccess(at)
}

// The norm functions state the normalisation contract independently of the
// backends: UTC, microseconds, empty slices read back as nil.

func normBytes(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return append([]byte(nil), b...)
}

func normStrings(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return append([]string(nil), s...)
}

func normClient(c store.Client) store.Client {
	c.SecretHash = normBytes(c.SecretHash)
	c.RedirectURIs, c.GrantTypes, c.ResponseTypes = normStrings(c.RedirectURIs), normStrings(c.GrantTypes), normStrings(c.ResponseTypes)
	c.CreatedAt, c.ExpiresAt, c.LastUsedAt = store.Time(c.CreatedAt), store.Time(c.ExpiresAt), store.Time(c.LastUsedAt)
	return c
}

func normCode(c store.AuthCode) store.AuthCode {
	c.Hash = normBytes(c.Hash)
	c.CreatedAt, c.ExpiresAt = store.Time(c.CreatedAt), store.Time(c.ExpiresAt)
	return c
}

func normGrant(g store.Grant) store.Grant {
	g.CreatedAt, g.ExpiresAt, g.RevokedAt = store.Time(g.CreatedAt), store.Time(g.ExpiresAt), store.Time(g.RevokedAt)
	return g
}

func normRefresh(r store.RefreshToken) store.RefreshToken {
	r.Hash = normBytes(r.Hash)
	r.CreatedAt, r.ExpiresAt, r.UsedAt = store.Time(r.CreatedAt), store.Time(r.ExpiresAt), store.Time(r.UsedAt)
	return r
}

func normAccess(a store.AccessToken) store.AccessToken {
	a.Hash = normBytes(a.Hash)
	a.CreatedAt, a.ExpiresAt = store.Time(a.CreatedAt), store.Time(a.ExpiresAt)
	return a
}

func normSession(s store.Session, version int64) store.Session {
	s.Groups, s.Claims, s.IDPTokens = normStrings(s.Groups), normBytes(s.Claims), normBytes(s.IDPTokens)
	s.IDPTokenExpiry, s.CreatedAt = store.Time(s.IDPTokenExpiry), store.Time(s.CreatedAt)
	s.ExpiresAt, s.RevokedAt = store.Time(s.ExpiresAt), store.Time(s.RevokedAt)
	s.Version = version
	return s
}

func normCookie(c store.BrowserCookie) store.BrowserCookie {
	c.Hash = normBytes(c.Hash)
	c.CreatedAt, c.ExpiresAt = store.Time(c.CreatedAt), store.Time(c.ExpiresAt)
	return c
}

func normUpstream(u store.UpstreamToken) store.UpstreamToken {
	u.Sealed = normBytes(u.Sealed)
	u.ExpiresAt, u.UpdatedAt = store.Time(u.ExpiresAt), store.Time(u.UpdatedAt)
	return u
}

func normOneTime(v store.OneTime) store.OneTime {
	v.Hash, v.Payload = normBytes(v.Hash), normBytes(v.Payload)
	v.ExpiresAt = store.Time(v.ExpiresAt)
	return v
}
