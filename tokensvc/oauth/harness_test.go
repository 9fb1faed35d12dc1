package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/tokensvc/hosts"
	"github.com/mcpmesh/gateway/tokensvc/reqid"
	"github.com/mcpmesh/gateway/tokensvc/secret"
	"github.com/mcpmesh/gateway/tokensvc/store"
	"github.com/mcpmesh/gateway/tokensvc/store/memory"
)

// Hosts and routes of the test configuration.
const (
	issuer      = "https://mcp.example.com" // two mcp.server routes
	resMain     = "https://mcp.example.com/mcp"
	resOther    = "https://mcp.example.com/other"
	soloIssuer  = "https://solo.example.com" // one mcp.server route
	resSolo     = "https://solo.example.com/mcp"
	appOrigin   = "https://app.example.com"   // mcp.client route
	plainOrigin = "https://plain.example.com" // route without mcp
	authOrigin  = "https://auth.example.com"  // authenticate service
	testCookie  = "test_session"
	loopbackCB  = "http://127.0.0.1:33418/callback"
)

func testConfig() *config.Config {
	server := func() *config.MCP { return &config.MCP{Server: &config.MCPServer{}} }
	return &config.Config{
		RuntimeFlags:           map[string]bool{"mcp": true},
		AuthenticateServiceURL: authOrigin,
		CookieExpiration:       config.Duration(14 * time.Hour),
		MCPAllowedClientIDDomains: []string{
			"*.clients.example", "exact.example.org", "localhost",
		},
		TokenService: config.TokenService{
			AccessTokenLifetime:  config.Duration(time.Hour),
			RefreshTokenLifetime: config.Duration(30 * 24 * time.Hour),
		},
		Routes: []config.Route{
			{Name: "Main MCP", From: resMain, To: "http://main.internal/mcp", MCP: server()},
			{Name: "Other MCP", From: resOther, To: "http://other.internal/mcp", MCP: server()},
			{Name: "Solo MCP", From: resSolo, To: "http://solo.internal/mcp", MCP: server()},
			{Name: "App", From: appOrigin, To: "http://app.internal", MCP: &config.MCP{Client: &config.MCPClient{}}},
			{Name: "Plain", From: plainOrigin, To: "http://plain.internal"},
		},
	}
}

// testClock is a settable clock.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// fakeSessions implements Sessions: the browser session is the store
// session named by the test_session cookie; the CSRF token is derived from it.
type fakeSessions struct {
	st    store.Store
	clock *testClock

	mu              sync.Mutex
	revalidate      func(ctx context.Context, id string) (*store.Session, error)
	revalidateCalls int
}

func (f *fakeSessions) Current(r *http.Request) (*store.Session, error) {
	c, err := r.Cookie(testCookie)
	if err != nil {
		return nil, nil
	}
	s, err := f.st.GetSession(r.Context(), c.Value)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &s, nil
}

func (f *fakeSessions) RedirectToSignIn(w http.ResponseWriter, r *http.Request, returnTo string) {
	http.Redirect(w, r, paths.SignIn+"?return_to="+url.QueryEscape(returnTo), http.StatusFound)
}

func (f *fakeSessions) CSRFToken(r *http.Request) string {
	c, err := r.Cookie(testCookie)
	if err != nil {
		return ""
	}
	return "csrf-" + c.Value
}

func (f *fakeSessions) VerifyCSRF(r *http.Request, token string) bool {
	c, err := r.Cookie(testCookie)
	return err == nil && token != "" && token == "csrf-"+c.Value
}

func (f *fakeSessions) Revalidate(ctx context.Context, id string) (*store.Session, error) {
	f.mu.Lock()
	f.revalidateCalls++
	fn := f.revalidate
	f.mu.Unlock()
	if fn == nil {
		return nil, ErrIDPRefused
	}
	return fn(ctx, id)
}

func (f *fakeSessions) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.revalidateCalls
}

// env is one authorization server on a memory store behind the hosts
// middleware, as the token service mounts it.
type env struct {
	t        testing.TB
	cfg      *config.Config
	st       *memory.Store
	clock    *testClock
	sessions *fakeSessions
	srv      *Server
	handler  http.Handler
}

func newEnv(t testing.TB, opts ...Option) *env {
	t.Helper()
	cfg := testConfig()
	return newEnvWithConfig(t, cfg, opts...)
}

func newEnvWithConfig(t testing.TB, cfg *config.Config, opts ...Option) *env {
	t.Helper()
	st := memory.New()
	clock := &testClock{t: time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC)}
	fs := &fakeSessions{st: st, clock: clock}
	srv := New(cfg, st, fs, append([]Option{WithClock(clock.Now)}, opts...)...)
	r := chi.NewRouter()
	r.Use(reqid.Middleware, hosts.NewTable(cfg).Middleware)
	routeForTest(r, srv)
	return &env{t: t, cfg: cfg, st: st, clock: clock, sessions: fs, srv: srv, handler: r}
}

// routeForTest routes the endpoints of srv on r as tokensvc/server (routes.go) does on a
// route host with mcp.server routes, with the same 404 and 405 answers. The routing itself is
// tested there, against the real router.
func routeForTest(r chi.Router, srv *Server) {
	r.NotFound(func(w http.ResponseWriter, r *http.Request) { notFound(w, r, nil) })
	r.MethodNotAllowed(func(w http.ResponseWriter, req *http.Request) {
		var allow []string
		for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodOptions} {
			if r.Match(chi.NewRouteContext(), m, req.URL.Path) {
				allow = append(allow, m)
			}
		}
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeJSON(w, http.StatusMethodNotAllowed, errorBody{Error: errInvalidRequest, Description: "method " + req.Method + " is not allowed here"})
	})
	r.Group(func(r chi.Router) {
		r.Use(CORS)
		for _, p := range []string{paths.AuthorizationServerMetadata, paths.ProtectedResourceMetadata, paths.ProtectedResourceMetadata + "/*", paths.Register, paths.Token, paths.Revoke} {
			r.Options(p, Preflight)
		}
		r.Get(paths.AuthorizationServerMetadata, srv.ASMetadata)
		r.Head(paths.AuthorizationServerMetadata, srv.ASMetadata)
		r.Handle(paths.AuthorizationServerMetadata+"/*", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { notFound(w, r, nil) }))
		r.Options(paths.AuthorizationServerMetadata+"/*", Preflight)
		r.Get(paths.OpenIDConfiguration, srv.ASMetadata)
		r.Handle(paths.OpenIDConfiguration+"/*", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { notFound(w, r, nil) }))
		r.Get(paths.ProtectedResourceMetadata, srv.PRMetadata)
		r.Head(paths.ProtectedResourceMetadata, srv.PRMetadata)
		r.Get(paths.ProtectedResourceMetadata+"/*", srv.PRMetadata)
		r.Head(paths.ProtectedResourceMetadata+"/*", srv.PRMetadata)
		r.Post(paths.Register, srv.Register)
		r.Post(paths.Token, srv.Token)
		r.Post(paths.Revoke, srv.Revoke)
	})
	r.Get(paths.Authorize, srv.Authorize)
	r.Post(paths.Authorize, srv.Authorize)
	r.Post(paths.Consent, srv.Consent)
}

// do serves req and returns the recorded response.
func (e *env) do(req *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	e.handler.ServeHTTP(rec, req)
	return rec
}

func (e *env) get(rawURL string, sessionID string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, rawURL, nil)
	if sessionID != "" {
		req.AddCookie(&http.Cookie{Name: testCookie, Value: sessionID})
	}
	return e.do(req)
}

func (e *env) postForm(rawURL string, form url.Values, sessionID string, basic ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, rawURL, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if sessionID != "" {
		req.AddCookie(&http.Cookie{Name: testCookie, Value: sessionID})
	}
	if len(basic) == 2 {
		req.SetBasicAuth(url.QueryEscape(basic[0]), url.QueryEscape(basic[1]))
	}
	return e.do(req)
}

// newSession stores a signed-in session expiring after 14 hours.
func (e *env) newSession(subject string) store.Session {
	e.t.Helper()
	now := e.clock.Now()
	s := store.Session{
		ID:        "sess-" + secret.NewToken()[:12],
		Subject:   subject,
		Email:     subject + "@example.com",
		CreatedAt: now,
		ExpiresAt: now.Add(14 * time.Hour),
	}
	if err := e.st.CreateSession(context.Background(), s); err != nil {
		e.t.Fatalf("create session: %v", err)
	}
	s.Version = 1
	return s
}

// registered is a client registered through the registration endpoint.
type registered struct {
	ID, Secret, Method string
	RedirectURI        string
}

// register registers a client with the given metadata (merged over a public
// TypeScript-SDK-like default).
func (e *env) register(meta map[string]any) registered {
	e.t.Helper()
	body := map[string]any{
		"client_name":                "Test Client",
		"redirect_uris":              []string{loopbackCB},
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
		"token_endpoint_auth_method": "none",
	}
	for k, v := range meta {
		if v == nil {
			delete(body, k)
		} else {
			body[k] = v
		}
	}
	b, _ := json.Marshal(body)
	req := httptest.NewRequest(http.MethodPost, issuer+paths.Register, strings.NewReader(string(b)))
	req.Header.Set("Content-Type", "application/json")
	rec := e.do(req)
	if rec.Code != http.StatusCreated {
		e.t.Fatalf("register: status %d: %s", rec.Code, rec.Body)
	}
	var resp registrationResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil {
		e.t.Fatalf("register: %v", err)
	}
	return registered{ID: resp.ClientID, Secret: resp.ClientSecret, Method: resp.TokenEndpointAuthMethod, RedirectURI: resp.RedirectURIs[0]}
}

// pkce returns a fresh verifier and its S256 challenge.
func pkce() (verifier, challenge string) {
	verifier = secret.NewToken()
	return verifier, pkceChallenge(verifier)
}

// pkceChallenge is the S256 challenge of verifier.
func pkceChallenge(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// authParams returns a valid authorization request for c.
func authParams(c registered, challenge string) url.Values {
	return url.Values{
		"response_type":         {"code"},
		"client_id":             {c.ID},
		"redirect_uri":          {c.RedirectURI},
		"code_challenge":        {challenge},
		"code_challenge_method": {"S256"},
		"state":                 {"st-123"},
		"resource":              {resMain},
	}
}

var (
	requestFieldRE = regexp.MustCompile(`name="request" value="([^"]+)"`)
	csrfFieldRE    = regexp.MustCompile(`name="csrf" value="([^"]*)"`)
)

// consentHandle extracts the consent request handle from a consent page.
func consentHandle(t testing.TB, rec *httptest.ResponseRecorder) string {
	t.Helper()
	if rec.Code != http.StatusOK {
		t.Fatalf("consent page: status %d, Location %q: %s", rec.Code, rec.Header().Get("Location"), rec.Body)
	}
	m := requestFieldRE.FindStringSubmatch(rec.Body.String())
	if m == nil {
		t.Fatalf("consent page has no request field:\n%s", rec.Body)
	}
	return m[1]
}

// answerConsent posts the consent form of handle as session sessionID.
func (e *env) answerConsent(on, sessionID, handle, action string) *httptest.ResponseRecorder {
	return e.postForm(on+paths.Consent, url.Values{
		"csrf": {"csrf-" + sessionID}, "request": {handle}, "action": {action},
	}, sessionID)
}

// location parses the Location header of a redirect.
func location(t testing.TB, rec *httptest.ResponseRecorder) *url.URL {
	t.Helper()
	loc := rec.Header().Get("Location")
	if loc == "" {
		t.Fatalf("no Location (status %d): %s", rec.Code, rec.Body)
	}
	u, err := url.Parse(loc)
	if err != nil {
		t.Fatalf("Location %q: %v", loc, err)
	}
	return u
}

// authorizeCode runs authorize + consent for c as sess and returns the code
// and the verifier. params may override request parameters.
func (e *env) authorizeCode(c registered, sess store.Session, override url.Values) (code, verifier string) {
	e.t.Helper()
	return e.authorizeCodeAt(issuer, c, sess, override)
}

// authorizeCodeAt is authorizeCode on the issuer origin.
func (e *env) authorizeCodeAt(origin string, c registered, sess store.Session, override url.Values) (code, verifier string) {
	e.t.Helper()
	verifier, challenge := pkce()
	p := authParams(c, challenge)
	for k, v := range override {
		if len(v) == 0 {
			p.Del(k)
		} else {
			p[k] = v
		}
	}
	rec := e.get(origin+paths.Authorize+"?"+p.Encode(), sess.ID)
	handle := consentHandle(e.t, rec)
	rec = e.answerConsent(origin, sess.ID, handle, actionApprove)
	if rec.Code != http.StatusSeeOther {
		e.t.Fatalf("consent approve: status %d: %s", rec.Code, rec.Body)
	}
	q := location(e.t, rec).Query()
	if q.Get("code") == "" {
		e.t.Fatalf("no code in %s", rec.Header().Get("Location"))
	}
	return q.Get("code"), verifier
}

// tokenForm is a token request redeeming code for c.
func codeForm(c registered, code, verifier string) url.Values {
	return url.Values{
		"grant_type":    {"authorization_code"},
		"code":          {code},
		"code_verifier": {verifier},
		"redirect_uri":  {c.RedirectURI},
		"client_id":     {c.ID},
		"resource":      {resMain},
	}
}

// token posts a token request with the client's registered authentication.
func (e *env) token(c registered, form url.Values) *httptest.ResponseRecorder {
	return e.tokenAt(issuer, c, form)
}

func (e *env) tokenAt(origin string, c registered, form url.Values) *httptest.ResponseRecorder {
	switch c.Method {
	case authSecretBasic:
		form.Del("client_id")
		return e.postForm(origin+paths.Token, form, "", c.ID, c.Secret)
	case authSecretPost:
		form.Set("client_id", c.ID)
		form.Set("client_secret", c.Secret)
	default:
		form.Set("client_id", c.ID)
	}
	return e.postForm(origin+paths.Token, form, "")
}

// tokens decodes a successful token response.
func tokens(t testing.TB, rec *httptest.ResponseRecorder) tokenResponse {
	t.Helper()
	if rec.Code != http.StatusOK {
		t.Fatalf("token: status %d: %s", rec.Code, rec.Body)
	}
	var tr tokenResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &tr); err != nil {
		t.Fatalf("token response: %v", err)
	}
	return tr
}

// oauthErr decodes an error response and checks its status and code.
func wantOAuthError(t testing.TB, rec *httptest.ResponseRecorder, status int, code string) {
	t.Helper()
	var eb errorBody
	_ = json.Unmarshal(rec.Body.Bytes(), &eb)
	if rec.Code != status || eb.Error != code {
		t.Fatalf("got status %d error %q (%s), want %d %q", rec.Code, eb.Error, eb.Description, status, code)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("error Content-Type %q", ct)
	}
}

// fullFlow registers nothing: it authorizes c for a new session and redeems
// the code.
func (e *env) fullFlow(c registered, subject string) (store.Session, tokenResponse) {
	e.t.Helper()
	sess := e.newSession(subject)
	code, verifier := e.authorizeCode(c, sess, nil)
	return sess, tokens(e.t, e.token(c, codeForm(c, code, verifier)))
}
