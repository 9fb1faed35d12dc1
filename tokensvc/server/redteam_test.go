package server

// Red-team tests: each one performs an attack on the token service's public or internal
// handlers and checks that it fails.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/shared/checkapi"
	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/tokensvc/idp"
	"github.com/mcpmesh/gateway/tokensvc/reqid"
	"github.com/mcpmesh/gateway/tokensvc/secret"
	"github.com/mcpmesh/gateway/tokensvc/store/memory"
)

// redTeamPolicyYAML has MCP server routes whose policies admit different users.
const redTeamPolicyYAML = `
runtime_flags: {mcp: true}
authenticate_service_url: https://auth.example.com
shared_secret: ZGVtby1vbmx5LXNoYXJlZC1zZWNyZXQtMzItYnl0ZXM=
cookie_secret: ZGVtby1vbmx5LWNvb2tpZS1zZWNyZXQtMzItYnl0ZXM=
idp_provider: oidc
idp_provider_url: https://idp.example.com
idp_client_id: gw
idp_client_secret: s3cret
storage: {type: memory}
routes:
  - name: App
    from: https://app.example.com
    to: http://app.internal
    policy: {allow: {and: [{authenticated_user: true}]}}
    mcp: {client: {}}
  - name: Open
    from: https://mcp.example.com/open
    to: http://open.internal/mcp
    policy: {allow: {and: [{authenticated_user: true}]}}
    mcp: {server: {}}
  - name: Admins
    from: https://mcp.example.com/admin
    to: http://admin.internal/mcp
    policy: {allow: {and: [{email: {is: root@example.com}}]}}
    mcp: {server: {}}
  - name: Engineering
    from: https://mcp.example.com/eng
    to: http://eng.internal/mcp
    policy: {allow: {and: [{groups: {has: eng}}]}}
    mcp: {server: {}}
  - name: R&D claim
    from: https://mcp.example.com/rnd
    to: http://rnd.internal/mcp
    policy: {allow: {and: [{claim/dept: r&d}]}}
    mcp: {server: {}}
  - name: Tool allowlist
    from: https://mcp.example.com/tools
    to: http://tools.internal/mcp
    policy:
      allow: {and: [{domain: {is: example.com}}]}
      deny: {and: [{mcp_tool: {not_in: [search]}}]}
    mcp: {server: {}}
  - name: Everyone but alice
    from: https://mcp.example.com/noalice
    to: http://noalice.internal/mcp
    policy:
      allow: {and: [{authenticated_user: true}]}
      deny: {and: [{user: {is: alice}}]}
    mcp: {server: {}}
  - name: No policy
    from: https://mcp.example.com/nopolicy
    to: http://nopolicy.internal/mcp
    mcp: {server: {}}
`

func newRedTeamEnv(t *testing.T, yaml string) *testEnv {
	t.Helper()
	cfg, err := config.Parse([]byte(yaml), nil)
	if err != nil {
		t.Fatal(err)
	}
	e := &testEnv{t: t, cfg: cfg, store: memory.New(), clock: &testClock{t: time.Unix(1_700_000_000, 0)}}
	e.srv, err = New(context.Background(), cfg, WithStore(e.store), WithConnector(newIDP()),
		WithClock(e.clock.now), WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.srv.Close() })
	return e
}

// Attack: a signed-in user lists the MCP servers to learn of servers (names, URLs) that
// their policy does not let them use. The listing must show only the servers the user's
// identity passes the route policy of (for a request that is not a tool call).
func TestRedTeam_RouteListingHidesServersThePolicyDenies(t *testing.T) {
	t.Parallel()
	e := newRedTeamEnv(t, redTeamPolicyYAML)
	// alice: example.com, group eng, claim dept=r&d (see testEnv.session).
	alice := e.session("alice")
	tok := e.token(alice, "", time.Hour)
	h := http.Header{}
	h.Set("Authorization", "Bearer "+tok)
	resp := e.public(http.MethodGet, "https://app.example.com"+paths.Routes, h)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("listing: status %d", resp.StatusCode)
	}
	var list RouteListing
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range list.Servers {
		names = append(names, s.Name)
	}
	want := []string{"Open", "Engineering", "R&D claim", "Tool allowlist"}
	if !slices.Equal(names, want) {
		t.Fatalf("alice sees %q, want %q (Admins, Everyone but alice and No policy deny her)", names, want)
	}
}

// Attack: the filter only ever sends a bearer token on MCP server routes; a check call that
// presents a bearer token for an mcp.client or plain route (a confused or compromised caller
// holding the filter key, or a future filter bug) must not get an identity and an assertion
// for a browser application. Those routes take the browser session only.
func TestRedTeam_CheckRefusesBearerTokenOnBrowserRoutes(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	s := e.session("alice")
	for name, tc := range map[string]struct{ route, host, resource string }{
		"client route, unbound token":     {appRoute, "app.example.com", ""},
		"client route, token bound to it": {appRoute, "app.example.com", appRoute},
		"plain route, unbound token":      {plainRoute, "plain.example.com", ""},
		"plain route, token bound to it":  {plainRoute, "plain.example.com", plainRoute},
	} {
		tok := e.token(s, tc.resource, time.Hour)
		status, resp := e.check(checkapi.Request{RouteID: tc.route, Host: tc.host, Token: tok})
		if status != http.StatusUnauthorized || resp.Status != checkapi.StatusInvalidToken || resp.Assertion != "" || resp.Identity != nil {
			t.Errorf("%s: status %d %+v, want 401 invalid_token without identity or assertion", name, status, resp)
		}
	}
	// An MCP server route still takes it.
	if status, _ := e.check(checkapi.Request{RouteID: demoRoute, Host: "mcp.example.com", Token: e.token(s, "", time.Hour)}); status != http.StatusOK {
		t.Fatalf("server route: status %d", status)
	}
}

// Attack: a client sends X-Request-Id with characters the service does not accept as a
// request ID. The service then logs the request under a fresh ID, but the authorization
// server's error page (and its own log records) showed the client's value, so an attacker
// could make a victim's error page, and log records, carry another request's ID. Every
// place must use the one ID the service chose, the one it returns in X-Request-Id.
func TestRedTeam_ErrorPageShowsTheServiceRequestIDNotTheClients(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	h := http.Header{}
	h.Set("X-Request-Id", "other-request/forged<id>")
	resp := e.public(http.MethodGet, "https://mcp.example.com"+paths.Authorize+"?client_id=unknown", h)
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("status %d", resp.StatusCode)
	}
	var body [8192]byte
	n, _ := resp.Body.Read(body[:])
	m := regexp.MustCompile(`Request ID: <code>([^<]*)</code>`).FindSubmatch(body[:n])
	got := resp.Header.Get(reqid.Header)
	if m == nil || string(m[1]) != got || got == "" {
		t.Fatalf("page request ID %q, response X-Request-Id %q: they must be the service's one ID", m, got)
	}
}

// Distinctive provider tokens and code, to search the logs for.
const (
	idpAccessSecret  = "idp-access-token-d4c1b5f0e2"
	idpRefreshSecret = "idp-refresh-token-9a8b7c6d5e"
	idpIDTokenSecret = "idp-id-token-77aa88bb99cc"
	idpCodeSecret    = "idp-code-0f1e2d3c4b5a"
)

// jarBrowser drives the public handler with a cookie jar and records every secret-looking
// value it sees (cookies, query parameters of redirects, form fields).
type jarBrowser struct {
	t       *testing.T
	h       http.Handler
	jar     *cookiejar.Jar
	secrets map[string]string // value -> where it was seen
}

func (b *jarBrowser) note(where, v string) {
	if len(v) >= 16 {
		b.secrets[v] = where
	}
}

func (b *jarBrowser) do(method, raw string, form url.Values, hdr http.Header) *httptest.ResponseRecorder {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	r := httptest.NewRequest(method, raw, body)
	if form != nil {
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range hdr {
		r.Header[k] = v
	}
	for _, c := range b.jar.Cookies(r.URL) {
		r.AddCookie(c)
	}
	rec := httptest.NewRecorder()
	b.h.ServeHTTP(rec, r)
	b.jar.SetCookies(r.URL, rec.Result().Cookies())
	for _, c := range rec.Result().Cookies() {
		b.note("cookie "+c.Name, c.Value)
	}
	if loc, err := url.Parse(rec.Header().Get("Location")); err == nil {
		for _, k := range []string{"code", "state"} { // the one-time values a redirect carries
			b.note("redirect parameter "+k, loc.Query().Get(k))
		}
	}
	for _, m := range regexp.MustCompile(`name="(csrf|csrf_token|request)" value="([^"]+)"`).FindAllStringSubmatch(rec.Body.String(), -1) {
		b.note("form field "+m[1], m[2])
	}
	return rec
}

// follow GETs raw and follows redirects, answering the provider's login as alice.
func (b *jarBrowser) follow(raw string, stopPrefix string) *httptest.ResponseRecorder {
	b.t.Helper()
	for range 15 {
		if strings.HasPrefix(raw, "https://idp.example.com/") {
			u, _ := url.Parse(raw)
			raw = "https://auth.example.com" + paths.IDPCallback + "?code=" + idpCodeSecret + "&state=" + url.QueryEscape(u.Query().Get("state"))
		}
		rec := b.do(http.MethodGet, raw, nil, nil)
		if rec.Code != http.StatusSeeOther && rec.Code != http.StatusFound {
			return rec
		}
		u, _ := url.Parse(raw)
		loc, _ := u.Parse(rec.Header().Get("Location"))
		raw = loc.String()
		if stopPrefix != "" && strings.HasPrefix(raw, stopPrefix) {
			return rec
		}
	}
	b.t.Fatal("redirect loop")
	return nil
}

// Attack: read the token service's logs (an operator, a log pipeline, a support ticket)
// after a complete session: sign-in at the provider, registration, consent, code, tokens,
// refresh, replays, check calls, revocation and sign-out, with every failure path an
// attacker can trigger. No credential may appear in any record at any level.
func TestRedTeam_NoSecretOfAWholeSessionReachesTheLogs(t *testing.T) {
	t.Parallel()
	cfg, err := config.Parse([]byte(testConfigYAML), nil)
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	var logMu sync.Mutex
	logger := slog.New(slog.NewJSONHandler(&lockedWriter{w: &logs, mu: &logMu}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	clock := &testClock{t: time.Unix(1_700_000_000, 0)}
	provider := newIDP() // signs everyone in as alice with the distinctive tokens
	provider.SignInAs = "alice"
	provider.Tokens = idp.Tokens{AccessToken: idpAccessSecret, RefreshToken: idpRefreshSecret, IDToken: idpIDTokenSecret}
	srv, err := New(context.Background(), cfg, WithStore(memory.New()), WithConnector(provider), WithClock(clock.now), WithLogger(logger))
	if err != nil {
		t.Fatal(err)
	}
	jar, _ := cookiejar.New(nil)
	b := &jarBrowser{t: t, h: srv.PublicHandler(), jar: jar, secrets: map[string]string{}}
	for _, s := range []string{idpAccessSecret, idpRefreshSecret, idpIDTokenSecret, idpCodeSecret, "s3cret", cfg.FilterKey()} {
		b.note("configured or provider secret", s)
	}
	const mcp = "https://mcp.example.com"
	const cb = "https://client.example/cb"

	// A confidential client registers.
	r := httptest.NewRequest(http.MethodPost, mcp+paths.Register, strings.NewReader(`{"redirect_uris":["`+cb+`"],"grant_types":["authorization_code","refresh_token"],"client_name":"x"}`))
	r.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	srv.PublicHandler().ServeHTTP(rec, r)
	var reg struct{ ClientID, ClientSecret string }
	if err := json.Unmarshal(rec.Body.Bytes(), &struct {
		ClientID     *string `json:"client_id"`
		ClientSecret *string `json:"client_secret"`
	}{&reg.ClientID, &reg.ClientSecret}); err != nil || reg.ClientSecret == "" {
		t.Fatalf("register: %d %s", rec.Code, rec.Body)
	}
	b.note("client secret", reg.ClientSecret)

	// Authorization with sign-in, consent, code.
	verifier := secret.NewToken()
	sum := sha256.Sum256([]byte(verifier))
	b.note("PKCE verifier", verifier)
	q := url.Values{"response_type": {"code"}, "client_id": {reg.ClientID}, "redirect_uri": {cb}, "state": {"client-state-0123456789"},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"}, "resource": {demoRoute}}
	page := b.follow(mcp+paths.Authorize+"?"+q.Encode(), "")
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"[\s\S]*name="request" value="([^"]+)"`).FindStringSubmatch(page.Body.String())
	if page.Code != http.StatusOK || m == nil {
		t.Fatalf("consent page: %d %s", page.Code, page.Body)
	}
	rec = b.do(http.MethodPost, mcp+paths.Consent, url.Values{"csrf": {m[1]}, "request": {m[2]}, "action": {"approve"}}, nil)
	loc, _ := url.Parse(rec.Header().Get("Location"))
	code := loc.Query().Get("code")
	if code == "" {
		t.Fatalf("consent: %d %q", rec.Code, rec.Header().Get("Location"))
	}
	// The token endpoint, its refresh and the failures an attacker can provoke.
	basic := http.Header{}
	basic.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(reg.ClientID)+":"+url.QueryEscape(reg.ClientSecret))))
	wrong := http.Header{}
	wrong.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(reg.ClientID)+":"+"wrong-secret-0123456789")))
	tok := func(form url.Values, h http.Header) map[string]any {
		rec := b.do(http.MethodPost, mcp+paths.Token, form, h)
		var out map[string]any
		_ = json.Unmarshal(rec.Body.Bytes(), &out)
		for _, k := range []string{"access_token", "refresh_token"} {
			if v, _ := out[k].(string); v != "" {
				b.note("token response "+k, v)
			}
		}
		return out
	}
	codeForm := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "code_verifier": {verifier}, "redirect_uri": {cb}, "resource": {demoRoute}}
	tok(codeForm, wrong)
	first := tok(codeForm, basic)
	at, _ := first["access_token"].(string)
	rt, _ := first["refresh_token"].(string)
	if at == "" || rt == "" {
		t.Fatalf("token response %v", first)
	}
	e := &testEnv{t: t, cfg: cfg, clock: clock, srv: srv}
	e.check(checkapi.Request{RouteID: demoRoute, Host: "mcp.example.com", Token: at})
	e.check(checkapi.Request{RouteID: otherRoute, Host: "mcp.example.com", Token: at}) // bound elsewhere
	listing := http.Header{}
	listing.Set("Authorization", "Bearer "+at)
	b.do(http.MethodGet, "https://app.example.com"+paths.Routes, nil, listing)
	second := tok(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}}, basic)
	tok(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}}, basic) // reuse: revokes
	tok(codeForm, basic)                                                           // code replay
	if rt2, _ := second["refresh_token"].(string); rt2 != "" {
		b.do(http.MethodPost, mcp+paths.Revoke, url.Values{"token": {rt2}}, basic)
	}
	// Sign-out with the form's CSRF token.
	page = b.do(http.MethodGet, mcp+paths.SignOut, nil, nil)
	if m := regexp.MustCompile(`name="csrf_token" value="([^"]+)"`).FindStringSubmatch(page.Body.String()); m != nil {
		b.do(http.MethodPost, mcp+paths.SignOut, url.Values{"csrf_token": {m[1]}}, nil)
	}

	logMu.Lock()
	out := logs.String()
	logMu.Unlock()
	if !strings.Contains(out, "tokens issued") || !strings.Contains(out, "signed out") {
		t.Fatalf("the flow did not run as expected; logs:\n%s", out)
	}
	if len(b.secrets) < 12 {
		t.Fatalf("only %d secrets collected: %v", len(b.secrets), b.secrets)
	}
	for v, where := range b.secrets {
		if strings.Contains(out, v) {
			t.Errorf("the logs contain a secret (%s)", where)
		}
	}
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
