package storetest

import (
	"testing"
	"time"

	"github.com/mcpmesh/gateway/tokensvc/store"
)

func sampleClient(t testing.TB) store.Client {
	return store.Client{
		ID:                      "https://app.example.com/client.json?x=" + ID(t, "c"),
		Kind:                    store.ClientDynamic,
		SecretHash:              Hash(t),
		Name:                    "Zoë's client ✓",
		RedirectURIs:            []string{"http://127.0.0.1/callback", "https://app.example.com/cb"},
		GrantTypes:              []string{"authorization_code", "refresh_token"},
		ResponseTypes:           []string{"code"},
		TokenEndpointAuthMethod: "client_secret_basic",
		Scope:                   "mcp offline_access",
		CreatedAt:               t0,
		ExpiresAt:               t0.Add(24 * time.Hour),
		LastUsedAt:              t0.Add(time.Minute),
	}
}

func testClientRoundTrip(t *testing.T, s store.Store) {
	c := sampleClient(t)
	must(t, s.CreateClient(ctx(t), c))
	got, err := s.GetClient(ctx(t), c.ID, t0)
	wantErr(t, "get client", err, nil)
	wantEqual(t, "client", got, normClient(c))
	if got.CreatedAt.Location() != time.UTC {
		t.Fatalf("CreatedAt location = %v, want UTC", got.CreatedAt.Location())
	}

	public := store.Client{ID: ID(t, "public"), Kind: store.ClientMetadataDocument, TokenEndpointAuthMethod: "none", CreatedAt: t0}
	must(t, s.CreateClient(ctx(t), public))
	got, err = s.GetClient(ctx(t), public.ID, t0.Add(100*365*24*time.Hour))
	wantErr(t, "get public client that never expires", err, nil)
	wantEqual(t, "public client", got, normClient(public))

	_, err = s.GetClient(ctx(t), "unknown", t0)
	wantErr(t, "get unknown client", err, store.ErrNotFound)
}

func testClientDuplicate(t *testing.T, s store.Store) {
	c := sampleClient(t)
	must(t, s.CreateClient(ctx(t), c))
	c.Name = "impostor"
	wantErr(t, "create duplicate client", s.CreateClient(ctx(t), c), store.ErrAlreadyExists)
	got, err := s.GetClient(ctx(t), c.ID, t0)
	wantErr(t, "get client", err, nil)
	if got.Name == "impostor" {
		t.Fatal("duplicate create overwrote the client")
	}
}

func testClientExpired(t *testing.T, s store.Store) {
	c := sampleClient(t)
	must(t, s.CreateClient(ctx(t), c))
	_, err := s.GetClient(ctx(t), c.ID, c.ExpiresAt.Add(-time.Millisecond))
	wantErr(t, "get client just before expiry", err, nil)
	_, err = s.GetClient(ctx(t), c.ID, c.ExpiresAt)
	wantErr(t, "get client at expiry", err, store.ErrNotFound)
	_, err = s.GetClient(ctx(t), c.ID, c.ExpiresAt.Add(time.Hour))
	wantErr(t, "get client after expiry", err, store.ErrNotFound)
}

func testClientTouch(t *testing.T, s store.Store) {
	c := sampleClient(t)
	must(t, s.CreateClient(ctx(t), c))

	used := t0.Add(2 * time.Hour)
	must(t, s.TouchClient(ctx(t), c.ID, used, c.ExpiresAt.Add(48*time.Hour)))
	got, err := s.GetClient(ctx(t), c.ID, c.ExpiresAt.Add(47*time.Hour))
	wantErr(t, "get client within extended expiry", err, nil)
	wantEqual(t, "last used", got.LastUsedAt, store.Time(used))
	wantEqual(t, "expires", got.ExpiresAt, store.Time(c.ExpiresAt.Add(48*time.Hour)))

	// An earlier or zero expiry never shortens the life.
	must(t, s.TouchClient(ctx(t), c.ID, used.Add(time.Minute), t0))
	must(t, s.TouchClient(ctx(t), c.ID, used.Add(2*time.Minute), time.Time{}))
	got, err = s.GetClient(ctx(t), c.ID, t0)
	wantErr(t, "get client", err, nil)
	wantEqual(t, "expires after shorter touches", got.ExpiresAt, store.Time(c.ExpiresAt.Add(48*time.Hour)))
	wantEqual(t, "last used", got.LastUsedAt, store.Time(used.Add(2*time.Minute)))

	// A client that never expires keeps never expiring.
	static := store.Client{ID: ID(t, "static"), Kind: store.ClientStatic, CreatedAt: t0}
	must(t, s.CreateClient(ctx(t), static))
	must(t, s.TouchClient(ctx(t), static.ID, used, t0.Add(time.Hour)))
	got, err = s.GetClient(ctx(t), static.ID, t0.Add(1000*time.Hour))
	wantErr(t, "get static client", err, nil)
	if !got.ExpiresAt.IsZero() {
		t.Fatalf("static client gained expiry %v", got.ExpiresAt)
	}

	wantErr(t, "touch unknown client", s.TouchClient(ctx(t), "unknown", used, used), store.ErrNotFound)
}

func testClientDelete(t *testing.T, s store.Store) {
	c := sampleClient(t)
	must(t, s.CreateClient(ctx(t), c))
	wantErr(t, "delete client", s.DeleteClient(ctx(t), c.ID), nil)
	_, err := s.GetClient(ctx(t), c.ID, t0)
	wantErr(t, "get deleted client", err, store.ErrNotFound)
	wantErr(t, "delete deleted client", s.DeleteClient(ctx(t), c.ID), store.ErrNotFound)
	must(t, s.CreateClient(ctx(t), c)) // the ID is free again
}

func testClientCopy(t *testing.T, s store.Store) {
	c := sampleClient(t)
	must(t, s.CreateClient(ctx(t), c))
	c.RedirectURIs[0] = "https://evil.example/cb" // caller mutates after create
	got, err := s.GetClient(ctx(t), c.ID, t0)
	wantErr(t, "get client", err, nil)
	if got.RedirectURIs[0] != "http://127.0.0.1/callback" {
		t.Fatalf("store shares the caller's slice: %q", got.RedirectURIs[0])
	}
	got.RedirectURIs[0] = "https://evil.example/cb" // caller mutates the result
	got.SecretHash[0] ^= 0xff
	again, err := s.GetClient(ctx(t), c.ID, t0)
	wantErr(t, "get client", err, nil)
	if again.RedirectURIs[0] != "http://127.0.0.1/callback" || again.SecretHash[0] == got.SecretHash[0] {
		t.Fatal("store shares its record with the caller")
	}
}

func testInvalidRecords(t *testing.T, s store.Store) {
	checks := []struct {
		name string
		err  error
	}{
		{"client without ID", s.CreateClient(ctx(t), store.Client{Kind: store.ClientStatic})},
		{"auth code without hash", s.CreateAuthCode(ctx(t), store.AuthCode{ClientID: "c", ExpiresAt: t0})},
		{"grant without ID", s.CreateGrant(ctx(t), store.Grant{ClientID: "c"}, store.RefreshToken{Hash: Hash(t)})},
		{"grant with refresh token without hash", s.CreateGrant(ctx(t), store.Grant{ID: "g", ClientID: "c"}, store.RefreshToken{})},
		{"access token without hash", s.CreateAccessToken(ctx(t), store.AccessToken{})},
		{"session without ID", s.CreateSession(ctx(t), store.Session{})},
		{"cookie without host", s.CreateBrowserCookie(ctx(t), store.BrowserCookie{Hash: Hash(t), SessionID: "s"})},
		{"upstream token without route", s.PutUpstreamToken(ctx(t), store.UpstreamToken{Subject: "u"})},
		{"one-time value without kind", s.PutOneTime(ctx(t), store.OneTime{Hash: Hash(t)})},
	}
	for _, c := range checks {
		if c.err == nil {
			t.Errorf("%s: accepted", c.name)
		}
	}
	_, err := s.GetGrant(ctx(t), "g")
	wantErr(t, "grant refused earlier", err, store.ErrNotFound)
}
