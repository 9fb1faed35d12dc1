package server

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/shared/checkapi"
	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/tokensvc/idp"
	"github.com/mcpmesh/gateway/tokensvc/idp/idptest"
	"github.com/mcpmesh/gateway/tokensvc/secret"
	"github.com/mcpmesh/gateway/tokensvc/store"
	"github.com/mcpmesh/gateway/tokensvc/store/memory"
)

const testConfigYAML = `
runtime_flags: {mcp: true}
authenticate_service_url: https://auth.example.com
shared_secret: ZGVtby1vbmx5LXNoYXJlZC1zZWNyZXQtMzItYnl0ZXM=
cookie_secret: ZGVtby1vbmx5LWNvb2tpZS1zZWNyZXQtMzItYnl0ZXM=
cookie_expiration: 2h
idp_provider: oidc
idp_provider_url: https://idp.example.com
idp_client_id: gw
idp_client_secret: s3cret
storage: {type: memory}
routes:
  - name: App
    from: https://app.example.com
    to: http://app.internal
    mcp: {client: {}}
  - name: Demo
    from: https://mcp.example.com/mcp
    to: http://demo.internal/mcp
    policy: {allow: {and: [{authenticated_user: true}]}}
    mcp: {server: {}}
  - from: https://mcp.example.com/other
    to: http://other.internal/mcp
    policy: {allow: {and: [{authenticated_user: true}]}}
    mcp: {server: {}}
  - name: GitHub
    from: https://gh.example.com/mcp
    to: http://gh.internal/mcp
    policy: {allow: {and: [{authenticated_user: true}]}}
    mcp:
      server:
        upstream_oauth2:
          client_id: up
          client_secret: up-secret
          endpoint: {auth_url: "https://github.com/login/oauth/authorize", token_url: "https://github.com/login/oauth/access_token"}
  - from: https://plain.example.com
    to: http://plain.internal
`

// Route IDs of the test configuration.
const (
	appRoute   = "https://app.example.com"
	demoRoute  = "https://mcp.example.com/mcp"
	otherRoute = "https://mcp.example.com/other"
	ghRoute    = "https://gh.example.com/mcp"
	plainRoute = "https://plain.example.com"
)

type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *testClock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// newIDP returns the fake identity provider of these tests. Nobody signs in at it unless a
// test sets SignInAs, so it redeems no code; it refuses every refresh.
func newIDP() *idptest.Connector {
	p := idptest.New("https://auth.example.com" + paths.IDPCallback)
	p.RefreshErr = fmt.Errorf("refresh: %w", idp.ErrRefused)
	return p
}

type testEnv struct {
	t     testing.TB
	cfg   *config.Config
	store *memory.Store
	clock *testClock
	srv   *Server
}

func newTestEnv(t testing.TB) *testEnv {
	t.Helper()
	cfg, err := config.Parse([]byte(testConfigYAML), nil)
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

// session stores a live session for subject and returns it.
func (e *testEnv) session(subject string) store.Session {
	e.t.Helper()
	now := e.clock.now()
	s := store.Session{
		ID: secret.NewToken(), Subject: subject, Email: subject + "@example.com", Name: "User " + subject,
		Groups: []string{"eng"}, Claims: []byte(`{"sub":"` + subject + `","dept":"r&d","roles":["a","b"],"level":3,"admin":false,"addr":{"c": "de"},"x":null}`),
		CreatedAt: now, ExpiresAt: now.Add(2 * time.Hour),
	}
	if err := e.store.CreateSession(context.Background(), s); err != nil {
		e.t.Fatal(err)
	}
	return s
}

// token stores an External Token of s bound to resource ("" for unbound) that lives ttl.
func (e *testEnv) token(s store.Session, resource string, ttl time.Duration) string {
	e.t.Helper()
	tok := secret.NewToken()
	now := e.clock.now()
	err := e.store.CreateAccessToken(context.Background(), store.AccessToken{
		Hash: secret.Hash(tok), ClientID: "client-1", SessionID: s.ID, Subject: s.Subject,
		Resource: resource, CreatedAt: now, ExpiresAt: now.Add(ttl),
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return tok
}

// cookie stores a browser cookie of s bound to host.
func (e *testEnv) cookie(s store.Session, host string) string {
	e.t.Helper()
	v := secret.NewToken()
	err := e.store.CreateBrowserCookie(context.Background(), store.BrowserCookie{
		Hash: secret.Hash(v), SessionID: s.ID, Host: host, CreatedAt: e.clock.now(), ExpiresAt: s.ExpiresAt,
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return v
}

// check calls the check API with the filter key.
func (e *testEnv) check(req checkapi.Request) (int, checkapi.Response) {
	e.t.Helper()
	b, _ := json.Marshal(req)
	r := httptest.NewRequest(http.MethodPost, "http://tokensvc.internal"+paths.Check, strings.NewReader(string(b)))
	r.Header.Set(checkapi.KeyHeader, e.cfg.FilterKey())
	rec := httptest.NewRecorder()
	e.srv.InternalHandler().ServeHTTP(rec, r)
	var resp checkapi.Response
	if rec.Body.Len() > 0 {
		if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil {
			e.t.Fatalf("check response %q: %v", rec.Body.String(), err)
		}
	}
	return rec.Code, resp
}

// public sends a request to the public handler.
func (e *testEnv) public(method, url string, hdr http.Header) *http.Response {
	e.t.Helper()
	r := httptest.NewRequest(method, url, nil)
	for k, v := range hdr {
		r.Header[k] = v
	}
	rec := httptest.NewRecorder()
	e.srv.PublicHandler().ServeHTTP(rec, r)
	return rec.Result()
}
