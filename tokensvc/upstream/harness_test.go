package upstream

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/tokensvc/hosts"
	"github.com/mcpmesh/gateway/tokensvc/secret"
	"github.com/mcpmesh/gateway/tokensvc/store"
	"github.com/mcpmesh/gateway/tokensvc/store/memory"
)

// provider is a fake upstream OAuth server the tests control: it authorizes at once (as the
// account in next), checks client authentication strictly (style), PKCE and redirect URIs,
// issues and rotates refresh tokens, and counts each refresh token's presentations.
type provider struct {
	t      testing.TB
	srv    *httptest.Server
	issuer string
	style  string // "header", "params" or "" (either)
	secret string

	mu        sync.Mutex
	n         int
	codes     map[string]providerCode
	refresh   map[string]string // refresh token -> account; deleted when spent or revoked
	spent     map[string]int    // presentations of each refresh token
	access    map[string]string // access token -> account
	issued    []string          // every token issued (for leak searches)
	expiresIn int
	rotate    bool
	hostile   func(w http.ResponseWriter, r *http.Request) bool // answers /token itself when it returns true
	next      string                                            // the account the next authorization is for
	tokenHits int
}

type providerCode struct {
	challenge, redirectURI, account string
}

func newProvider(t testing.TB, style string) *provider {
	p := &provider{t: t, style: style, secret: "up-secret-" + secret.NewToken()[:12], codes: map[string]providerCode{},
		refresh: map[string]string{}, spent: map[string]int{}, access: map[string]string{}, expiresIn: 3600, rotate: true, next: "upstream-alice"}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	p.issuer = p.srv.URL
	t.Cleanup(p.srv.Close)
	return p
}

func (p *provider) serve(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/authorize":
		q := r.URL.Query()
		if q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("response_type") != "code" {
			http.Error(w, "bad authorization request", 400)
			return
		}
		code := "code-" + secret.NewToken()
		p.mu.Lock()
		p.codes[code] = providerCode{challenge: q.Get("code_challenge"), redirectURI: q.Get("redirect_uri"), account: p.next}
		p.mu.Unlock()
		v := url.Values{"code": {code}, "state": {q.Get("state")}, "iss": {p.issuer}}
		http.Redirect(w, r, q.Get("redirect_uri")+"?"+v.Encode(), http.StatusFound)
	case "/token":
		p.mu.Lock()
		p.tokenHits++
		hostile := p.hostile
		p.mu.Unlock()
		if hostile != nil && hostile(w, r) {
			return
		}
		p.token(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (p *provider) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		oauthError(w, 400, "invalid_request")
		return
	}
	user, pass, basic := r.BasicAuth()
	if basic {
		user, _ = url.QueryUnescape(user)
		pass, _ = url.QueryUnescape(pass)
	}
	switch {
	case basic && p.style != "params" && user == "gw-client" && pass == p.secret:
	case !basic && p.style != "header" && r.PostForm.Get("client_id") == "gw-client" && r.PostForm.Get("client_secret") == p.secret:
	default:
		oauthError(w, 401, "invalid_client")
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var account string
	switch r.PostForm.Get("grant_type") {
	case "authorization_code":
		c, ok := p.codes[r.PostForm.Get("code")]
		delete(p.codes, r.PostForm.Get("code"))
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		if !ok || c.redirectURI != r.PostForm.Get("redirect_uri") || base64.RawURLEncoding.EncodeToString(sum[:]) != c.challenge {
			oauthError(w, 400, "invalid_grant")
			return
		}
		account = c.account
	case "refresh_token":
		rt := r.PostForm.Get("refresh_token")
		p.spent[rt]++
		a, ok := p.refresh[rt]
		if !ok {
			oauthError(w, 400, "invalid_grant")
			return
		}
		account = a
		if p.rotate {
			delete(p.refresh, rt)
		}
	default:
		oauthError(w, 400, "unsupported_grant_type")
		return
	}
	p.n++
	at := fmt.Sprintf("at-%d-%s-%s", p.n, account, secret.NewToken()[:8])
	body := map[string]any{"access_token": at, "token_type": "Bearer", "expires_in": p.expiresIn, "scope": "read"}
	p.access[at] = account
	p.issued = append(p.issued, at)
	if p.rotate || r.PostForm.Get("grant_type") == "authorization_code" {
		rt := fmt.Sprintf("rt-%d-%s-%s", p.n, account, secret.NewToken()[:8])
		p.refresh[rt] = account
		p.issued = append(p.issued, rt)
		body["refresh_token"] = rt
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(body)
}

func oauthError(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"error":%q}`, code)
}

// revokeAll revokes every refresh token of account (a grant revoked at the provider).
func (p *provider) revokeAll(account string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for rt, a := range p.refresh {
		if a == account {
			delete(p.refresh, rt)
		}
	}
}

// sessions is a fake browser-session service: cookie "sid" names a session.
type sessions struct {
	st store.Store
}

func (s sessions) Current(r *http.Request) (*store.Session, error) {
	c, err := r.Cookie("sid")
	if err != nil {
		return nil, nil
	}
	sess, err := s.st.GetSession(r.Context(), c.Value)
	if err != nil {
		return nil, nil
	}
	return &sess, nil
}

func (sessions) RedirectToSignIn(w http.ResponseWriter, r *http.Request, returnTo string) {
	http.Redirect(w, r, paths.SignIn+"?return_to="+url.QueryEscape(returnTo), http.StatusFound)
}

func (sessions) CSRFToken(r *http.Request) string {
	c, err := r.Cookie("sid")
	if err != nil {
		return ""
	}
	return "csrf-" + c.Value
}

func (sessions) VerifyCSRF(r *http.Request, token string) bool {
	c, err := r.Cookie("sid")
	return err == nil && token == "csrf-"+c.Value
}

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// env is a Service with its handlers behind the host table, a provider and a log buffer.
type env struct {
	t     testing.TB
	cfg   *config.Config
	st    store.Store
	svc   *Service
	p     *provider
	clock *clock
	logs  *syncBuffer
	h     http.Handler
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}
func (b *syncBuffer) String() string { b.mu.Lock(); defer b.mu.Unlock(); return b.b.String() }

const routeID = "https://up.example.com/mcp"

// testConfigYAML is the configuration of the tests: an mcp.client route and one
// upstream_oauth2 route whose provider is p.
func testConfigYAML(p *provider, style string) string {
	styleLine := ""
	if style != "" {
		styleLine = ", auth_style: " + style
	}
	y := `
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
    mcp: {client: {}}
  - name: Upstream
    from: https://up.example.com/mcp
    to: http://up.internal/mcp
    policy: {allow: {and: [{authenticated_user: true}]}, deny: {or: [{email: {is: denied@example.com}}]}}
    mcp:
      server:
        upstream_oauth2:
          client_id: gw-client
          client_secret: ` + p.secret + `
          scopes: [read, write]
          endpoint: {auth_url: "` + p.srv.URL + `/authorize", token_url: "` + p.srv.URL + `/token"` + styleLine + `}
`
	return y
}

func newEnv(t testing.TB, style string, st store.Store) *env {
	t.Helper()
	return newEnvWith(t, style, st, "")
}

// newEnvWith is newEnv with extra routes appended to the configuration (YAML list items,
// "{provider}" and "{secret}" standing for the provider's URL and client secret).
func newEnvWith(t testing.TB, style string, st store.Store, extraRoutes string) *env {
	t.Helper()
	p := newProvider(t, style)
	cfg, err := config.Parse([]byte(testConfigYAML(p, style)+strings.NewReplacer("{provider}", p.srv.URL, "{secret}", p.secret).Replace(extraRoutes)), nil)
	if err != nil {
		t.Fatal(err)
	}
	if st == nil {
		st = memory.New()
	}
	e := &env{t: t, cfg: cfg, st: st, p: p, clock: &clock{t: time.Now()}, logs: &syncBuffer{}}
	sealer, err := secret.NewSealer(cfg.DeriveKey("seal"))
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e.svc = New(cfg, st, sealer, sessions{st}, WithClock(e.clock.now), WithLogger(log))
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+paths.Connect, e.svc.Connect)
	mux.HandleFunc("GET "+paths.UpstreamCallback, e.svc.Callback)
	mux.HandleFunc("GET "+paths.Disconnect, e.svc.DisconnectPage)
	mux.HandleFunc("POST "+paths.Disconnect, e.svc.Disconnect)
	e.h = hosts.NewTable(cfg).Middleware(mux)
	return e
}

// session stores a live session for subject and returns its ID (the "sid" cookie).
func (e *env) session(subject, email string) string {
	e.t.Helper()
	now := e.clock.now()
	s := store.Session{ID: secret.NewToken(), Subject: subject, Email: email, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	if err := e.st.CreateSession(context.Background(), s); err != nil {
		e.t.Fatal(err)
	}
	return s.ID
}

// do sends a request to the service's handlers as browser sid (none when "").
func (e *env) do(method, target, sid string, form url.Values, hdr map[string]string) *httptest.ResponseRecorder {
	e.t.Helper()
	var body *strings.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	} else {
		body = strings.NewReader("")
	}
	r := httptest.NewRequest(method, target, body)
	if form != nil {
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if sid != "" {
		r.AddCookie(&http.Cookie{Name: "sid", Value: sid})
	}
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, r)
	return rec
}

// authorize follows a redirect to the provider's authorization endpoint and returns the
// callback URL it redirects back to.
func (e *env) authorize(location string) string {
	e.t.Helper()
	if !strings.HasPrefix(location, e.p.srv.URL+"/authorize?") {
		e.t.Fatalf("not sent to the provider: %q", location)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(location)
	if err != nil {
		e.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		e.t.Fatalf("provider answered %d", resp.StatusCode)
	}
	return resp.Header.Get("Location")
}

const appURL = "https://app.example.com/after"

// connect runs the whole connect flow for sid and returns the final response.
func (e *env) connect(sid string) *httptest.ResponseRecorder {
	e.t.Helper()
	rec := e.do("GET", "https://up.example.com"+paths.Connect+"?redirect_url="+url.QueryEscape(appURL), sid, nil, nil)
	if rec.Code != http.StatusSeeOther {
		e.t.Fatalf("connect: %d %s", rec.Code, rec.Body.String())
	}
	cb := e.authorize(rec.Header().Get("Location"))
	return e.do("GET", cb, sid, nil, nil)
}

// secrets returns every value that must never appear in a log line or a page.
func (e *env) secrets() []string {
	e.p.mu.Lock()
	defer e.p.mu.Unlock()
	return append([]string{e.p.secret}, e.p.issued...)
}

// assertNoLeak fails if any secret appears in the logs or in texts.
func (e *env) assertNoLeak(texts ...string) {
	e.t.Helper()
	all := append([]string{e.logs.String()}, texts...)
	for _, s := range e.secrets() {
		for i, txt := range all {
			if strings.Contains(txt, s) {
				e.t.Errorf("secret %.12s… appears in text %d", s, i)
			}
		}
	}
}
