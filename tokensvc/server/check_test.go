package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/mcpmesh/gateway/shared/checkapi"
	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/tokensvc/assertion"
	"github.com/mcpmesh/gateway/tokensvc/secret"
	"github.com/mcpmesh/gateway/tokensvc/store"
	"github.com/mcpmesh/gateway/tokensvc/upstream"
)

func TestCheck_FilterKeyRequired(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	s := e.session("alice")
	body := `{"route_id":"` + demoRoute + `","host":"mcp.example.com","token":"` + e.token(s, "", time.Hour) + `"}`
	for name, key := range map[string]string{"missing": "", "wrong": "not-the-key", "prefix": e.cfg.FilterKey()[:10], "shared secret": e.cfg.SharedSecret} {
		r := httptest.NewRequest(http.MethodPost, paths.Check, strings.NewReader(body))
		if key != "" {
			r.Header.Set(checkapi.KeyHeader, key)
		}
		rec := httptest.NewRecorder()
		e.srv.InternalHandler().ServeHTTP(rec, r)
		if rec.Code != http.StatusUnauthorized || rec.Body.Len() != 0 {
			t.Errorf("%s key: status %d body %q, want 401 and nothing else", name, rec.Code, rec.Body.String())
		}
	}
}

// verifyAssertion checks the assertion against the JWKS the public listener serves on host.
func verifyAssertion(t *testing.T, e *testEnv, token, host string) map[string]any {
	t.Helper()
	resp := e.public(http.MethodGet, "https://"+host+paths.JWKS, nil)
	if resp.StatusCode != 200 || resp.Header.Get("Cache-Control") != assertion.JWKSCacheControl {
		t.Fatalf("JWKS on %s: %d %v", host, resp.StatusCode, resp.Header)
	}
	var set jose.JSONWebKeySet
	if err := json.NewDecoder(resp.Body).Decode(&set); err != nil {
		t.Fatal(err)
	}
	parsed, err := jwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		t.Fatal(err)
	}
	keys := set.Key(parsed.Headers[0].KeyID)
	if len(keys) != 1 {
		t.Fatalf("kid %q not in JWKS", parsed.Headers[0].KeyID)
	}
	var std jwt.Claims
	var all map[string]any
	if err := parsed.Claims(keys[0].Key, &std, &all); err != nil {
		t.Fatalf("assertion does not verify: %v", err)
	}
	if err := std.ValidateWithLeeway(jwt.Expected{Issuer: "https://auth.example.com", AnyAudience: jwt.Audience{host}, Time: e.clock.now()}, 0); err != nil {
		t.Fatalf("assertion claims: %v", err)
	}
	return all
}

func TestCheck_TokenGivesBundleWithVerifiableAssertion(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	s := e.session("alice")
	status, resp := e.check(checkapi.Request{RouteID: demoRoute, Host: "MCP.example.com:443", Token: e.token(s, demoRoute, 30*time.Minute)})
	if status != 200 || resp.Status != checkapi.StatusOK {
		t.Fatalf("status %d %+v", status, resp)
	}
	id := resp.Identity
	if id == nil || id.Subject != "alice" || id.Email != "alice@example.com" || id.Name != "User alice" || !slices.Equal(id.Groups, []string{"eng"}) {
		t.Fatalf("identity = %+v", id)
	}
	wantClaims := map[string][]string{"sub": {"alice"}, "dept": {"r&d"}, "roles": {"a", "b"}, "level": {"3"}, "admin": {"false"}, "addr": {`{"c":"de"}`}}
	for k, v := range wantClaims {
		if !slices.Equal(id.Claims[k], v) {
			t.Errorf("claims[%s] = %q, want %q", k, id.Claims[k], v)
		}
	}
	if _, ok := id.Claims["x"]; ok {
		t.Error("null claim kept")
	}
	claims := verifyAssertion(t, e, resp.Assertion, "mcp.example.com")
	if claims["aud"] != "mcp.example.com" || claims["sub"] != "alice" || claims["email"] != "alice@example.com" {
		t.Errorf("assertion claims = %v", claims)
	}
	now := e.clock.now()
	if resp.ExpiresAt <= now.Unix() || resp.ExpiresAt > now.Add(assertion.MaxLifetime).Unix() {
		t.Errorf("expires_at = %d, want within the assertion lifetime", resp.ExpiresAt)
	}
	if resp.UpstreamToken != "" || resp.ClientToken != "" {
		t.Error("unexpected tokens in the bundle")
	}
	// A token expiring soon bounds the bundle.
	_, resp = e.check(checkapi.Request{RouteID: demoRoute, Host: "mcp.example.com", Token: e.token(s, "", 40*time.Second)})
	if resp.ExpiresAt != now.Add(40*time.Second).Unix() {
		t.Errorf("expires_at = %d, want the token's expiry %d", resp.ExpiresAt, now.Add(40*time.Second).Unix())
	}
}

func TestCheck_TokenRefusals(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	alice := e.session("alice")
	revoked := e.session("rita")
	revokedTok := e.token(revoked, "", time.Hour)
	if err := e.store.RevokeSession(context.Background(), revoked.ID, e.clock.now()); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		route string
		token string
	}{
		{"unknown token", demoRoute, secret.NewToken()},
		{"token for another resource", demoRoute, e.token(alice, otherRoute, time.Hour)},
		{"token for another host's resource", demoRoute, e.token(alice, ghRoute, time.Hour)},
		{"revoked session", demoRoute, revokedTok},
	}
	for _, tc := range cases {
		status, resp := e.check(checkapi.Request{RouteID: tc.route, Host: "mcp.example.com", Token: tc.token})
		if status != http.StatusUnauthorized || resp.Status != checkapi.StatusInvalidToken || resp.Identity != nil || resp.Assertion != "" {
			t.Errorf("%s: status %d %+v, want 401 invalid_token", tc.name, status, resp)
		}
	}
	// A host-wide token (resource = origin) is valid at every route of the host.
	if status, _ := e.check(checkapi.Request{RouteID: otherRoute, Host: "mcp.example.com", Token: e.token(alice, "https://mcp.example.com", time.Hour)}); status != 200 {
		t.Errorf("origin-bound token: status %d", status)
	}
}

func TestCheck_TokenDoesNotOutliveItsSession(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	s := e.session("alice")
	tok := e.token(s, "", 3*time.Hour) // outlives the 2h session
	e.clock.add(2*time.Hour + time.Second)
	status, resp := e.check(checkapi.Request{RouteID: demoRoute, Host: "mcp.example.com", Token: tok})
	if status != http.StatusUnauthorized || resp.Status != checkapi.StatusInvalidToken {
		t.Fatalf("expired session: status %d %+v", status, resp)
	}
}

func TestCheck_CookieOnClientRouteGetsClientToken(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	s := e.session("alice")
	status, resp := e.check(checkapi.Request{RouteID: appRoute, Host: "app.example.com", Cookie: e.cookie(s, "app.example.com")})
	if status != 200 || resp.ClientToken == "" || resp.Identity.Subject != "alice" {
		t.Fatalf("status %d %+v", status, resp)
	}
	verifyAssertion(t, e, resp.Assertion, "app.example.com")
	// The client token is a TE valid at MCP server routes for the same user.
	status, resp2 := e.check(checkapi.Request{RouteID: demoRoute, Host: "mcp.example.com", Token: resp.ClientToken})
	if status != 200 || resp2.Identity.Subject != "alice" {
		t.Errorf("client token at an MCP server: %d %+v", status, resp2)
	}
	// A plain route gets identity but no client token.
	_, resp3 := e.check(checkapi.Request{RouteID: plainRoute, Host: "plain.example.com", Cookie: e.cookie(s, "plain.example.com")})
	if resp3.Status != checkapi.StatusOK || resp3.ClientToken != "" {
		t.Errorf("plain route: %+v", resp3)
	}
}

func TestCheck_CookieRefusals(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	s := e.session("alice")
	appCookie := e.cookie(s, "app.example.com")
	cases := []struct {
		name, route, host, cookie string
	}{
		{"cookie of another host", plainRoute, "plain.example.com", appCookie},
		{"unknown cookie", appRoute, "app.example.com", secret.NewToken()},
		{"cookie on an MCP server route", demoRoute, "mcp.example.com", e.cookie(s, "mcp.example.com")},
	}
	for _, tc := range cases {
		status, resp := e.check(checkapi.Request{RouteID: tc.route, Host: tc.host, Cookie: tc.cookie})
		if status != http.StatusUnauthorized || resp.Status != checkapi.StatusNoSession {
			t.Errorf("%s: status %d %+v, want 401 no_session", tc.name, status, resp)
		}
	}
}

func TestCheck_UpstreamRoute(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	s := e.session("alice")
	tok := e.token(s, "", time.Hour)
	refused := func(what string, status int, resp checkapi.Response) {
		t.Helper()
		if status != http.StatusUnauthorized || resp.Status != checkapi.StatusUpstreamRequired || resp.Error != "invalid_token" || resp.UpstreamToken != "" {
			t.Errorf("%s: status %d %+v, want 401 upstream_required/invalid_token", what, status, resp)
		}
	}
	status, resp := e.check(checkapi.Request{RouteID: ghRoute, Host: "gh.example.com", Token: tok})
	refused("without TI", status, resp)
	sealer, _ := secret.NewSealer(e.cfg.DeriveKey("seal"))
	ti, _ := json.Marshal(upstream.Token{AccessToken: "ti-secret", Expiry: e.clock.now().Add(10 * time.Minute)})
	put := func(sealed []byte) {
		if err := e.store.PutUpstreamToken(context.Background(), store.UpstreamToken{Subject: "alice", RouteID: ghRoute, Sealed: sealed, UpdatedAt: e.clock.now()}); err != nil {
			t.Fatal(err)
		}
	}
	put(sealer.Seal(ti, upstream.SealPurpose("alice", ghRoute)))
	status, resp = e.check(checkapi.Request{RouteID: ghRoute, Host: "gh.example.com", Token: tok})
	if status != 200 || resp.UpstreamToken != "ti-secret" {
		t.Fatalf("with TI: status %d %+v", status, resp)
	}
	// The bundle never outlives the TI: it expires when the TI is due for refresh.
	if want := e.clock.now().Add(10*time.Minute - upstream.RefreshMargin).Unix(); resp.ExpiresAt > want {
		t.Errorf("bundle expires at %d, after the TI's refresh time %d", resp.ExpiresAt, want)
	}
	// Another user does not get alice's TI.
	status, resp = e.check(checkapi.Request{RouteID: ghRoute, Host: "gh.example.com", Token: e.token(e.session("bob"), "", time.Hour)})
	refused("bob", status, resp)
	// A TI sealed for another route, or for another user, is refused.
	put(sealer.Seal(ti, upstream.SealPurpose("alice", demoRoute)))
	status, resp = e.check(checkapi.Request{RouteID: ghRoute, Host: "gh.example.com", Token: tok})
	refused("TI sealed for another route", status, resp)
	put(sealer.Seal(ti, upstream.SealPurpose("bob", ghRoute)))
	status, resp = e.check(checkapi.Request{RouteID: ghRoute, Host: "gh.example.com", Token: tok})
	refused("TI sealed for another user", status, resp)
	// An expired TI without a refresh token needs a reconnect.
	put(sealer.Seal(ti, upstream.SealPurpose("alice", ghRoute)))
	e.clock.add(11 * time.Minute)
	status, resp = e.check(checkapi.Request{RouteID: ghRoute, Host: "gh.example.com", Token: tok})
	refused("expired TI", status, resp)
}

func TestCheck_BadRequests(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	s := e.session("alice")
	tok := e.token(s, "", time.Hour)
	cases := []struct {
		name   string
		body   string
		method string
		want   int
	}{
		{"unknown route", `{"route_id":"https://nope.example.com","host":"nope.example.com","token":"` + tok + `"}`, "POST", 400},
		{"host not the route's", `{"route_id":"` + demoRoute + `","host":"app.example.com","token":"` + tok + `"}`, "POST", 400},
		{"no host", `{"route_id":"` + demoRoute + `","token":"` + tok + `"}`, "POST", 400},
		{"token and cookie", `{"route_id":"` + demoRoute + `","host":"mcp.example.com","token":"` + tok + `","cookie":"x"}`, "POST", 400},
		{"no credential", `{"route_id":"` + demoRoute + `","host":"mcp.example.com"}`, "POST", 400},
		{"not JSON", `route_id=x`, "POST", 400},
		{"trailing data", `{"route_id":"` + demoRoute + `","host":"mcp.example.com","token":"` + tok + `"} {}`, "POST", 400},
		{"too large", `{"route_id":"` + strings.Repeat("a", 17<<10) + `"}`, "POST", 413},
		{"GET", ``, "GET", 405},
	}
	for _, tc := range cases {
		r := httptest.NewRequest(tc.method, paths.Check, strings.NewReader(tc.body))
		r.Header.Set(checkapi.KeyHeader, e.cfg.FilterKey())
		rec := httptest.NewRecorder()
		e.srv.InternalHandler().ServeHTTP(rec, r)
		if rec.Code != tc.want {
			t.Errorf("%s: status %d, want %d (%s)", tc.name, rec.Code, tc.want, rec.Body.String())
		}
	}
}

func BenchmarkCheck_Token(b *testing.B) {
	e := newTestEnv(b)
	s := e.session("alice")
	body, _ := json.Marshal(checkapi.Request{RouteID: demoRoute, Host: "mcp.example.com", Token: e.token(s, "", time.Hour)})
	h := e.srv.InternalHandler()
	key := e.cfg.FilterKey()
	b.ReportAllocs()
	for b.Loop() {
		r := httptest.NewRequest(http.MethodPost, paths.Check, strings.NewReader(string(body)))
		r.Header.Set(checkapi.KeyHeader, key)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code != 200 {
			b.Fatal(rec.Code, rec.Body.String())
		}
	}
}

func BenchmarkCheck_CookieClientRoute(b *testing.B) {
	e := newTestEnv(b)
	s := e.session("alice")
	body, _ := json.Marshal(checkapi.Request{RouteID: appRoute, Host: "app.example.com", Cookie: e.cookie(s, "app.example.com")})
	h := e.srv.InternalHandler()
	key := e.cfg.FilterKey()
	b.ReportAllocs()
	for b.Loop() {
		r := httptest.NewRequest(http.MethodPost, paths.Check, strings.NewReader(string(body)))
		r.Header.Set(checkapi.KeyHeader, key)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code != 200 {
			b.Fatal(rec.Code, rec.Body.String())
		}
	}
}

// TestCheck_SessionKeyBindsUserAndRoute: the key the filter binds MCP session IDs with is one
// per user and route (another user's, or another route's, cannot open the session), the same
// for every token of the user and on every replica (the same shared_secret), and only MCP
// server routes get one.
func TestCheck_SessionKeyBindsUserAndRoute(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	replica := newTestEnv(t) // another token service with the same configuration
	alice, bob := e.session("alice"), e.session("bob")
	key := func(env *testEnv, s store.Session, route string) string {
		t.Helper()
		status, resp := env.check(checkapi.Request{RouteID: route, Host: "mcp.example.com", Token: env.token(s, "", time.Hour)})
		if status != 200 {
			t.Fatalf("check %s on %s: %d %+v", s.Subject, route, status, resp)
		}
		if k, err := base64.RawURLEncoding.DecodeString(resp.SessionKey); err != nil || len(k) != 32 {
			t.Fatalf("session key %q: %v", resp.SessionKey, err)
		}
		return resp.SessionKey
	}
	aliceDemo := key(e, alice, demoRoute)
	if again := key(e, alice, demoRoute); again != aliceDemo {
		t.Error("a second token of the same user got another session key")
	}
	if key(e, bob, demoRoute) == aliceDemo {
		t.Error("two users share a session key")
	}
	if key(e, alice, otherRoute) == aliceDemo {
		t.Error("two routes share a session key")
	}
	replicaAlice := replica.session("alice")
	if key(replica, replicaAlice, demoRoute) != aliceDemo {
		t.Error("another replica gives alice another session key")
	}
	_, resp := e.check(checkapi.Request{RouteID: appRoute, Host: "app.example.com", Cookie: e.cookie(alice, "app.example.com")})
	if resp.Status != checkapi.StatusOK || resp.SessionKey != "" {
		t.Errorf("browser route: %+v, want a bundle without a session key", resp)
	}
}
