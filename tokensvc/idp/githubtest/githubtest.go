// Package githubtest is a GitHub-compatible OAuth 2.0 server and REST API for tests of the
// github connector (docs/idp/github.md). It is written from GitHub's documented endpoints and
// response shapes, not from GitHub's code: the web application flow of OAuth apps
// (GET /login/oauth/authorize, POST /login/oauth/access_token with PKCE S256 and GitHub's
// habit of answering errors with status 200 and an "error" field) and the REST API as GitHub
// Enterprise Server serves it under /api/v3 (GET /user, /user/emails, /user/orgs,
// /user/teams, paged with per_page, page and a Link header). The real github.com cannot be
// reached from the machines these tests run on, so this server stands in for it: what it
// does not check, the tests do not prove about GitHub.
//
// Sign-in is automatic: the authorization endpoint signs in the user LoginAs chose (the
// first user by default) and redirects back with a code at once.
package githubtest

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// User is an account of the test server.
type User struct {
	ID     int64
	Login  string
	Name   string
	Emails []Email
	// Orgs are organisation logins; Teams are (organisation, team slug) pairs.
	Orgs  []string
	Teams []Team
}

// Email is one address of GET /user/emails.
type Email struct {
	Email    string
	Primary  bool
	Verified bool
}

// Team is a team membership.
type Team struct{ Org, Slug string }

// Alice is the default first user: id 1001, login alice, a verified primary address, the
// organisation acme and the teams acme/engineering and acme/platform.
func Alice() User {
	return User{ID: 1001, Login: "alice", Name: "Alice Example",
		Emails: []Email{{Email: "alice@old.example.com", Verified: true}, {Email: "alice@example.com", Primary: true, Verified: true}},
		Orgs:   []string{"acme"}, Teams: []Team{{"acme", "engineering"}, {"acme", "platform"}}}
}

// Bob is the default second user: id 1002, login bob, in acme/sales only.
func Bob() User {
	return User{ID: 1002, Login: "bob", Name: "Bob Example",
		Emails: []Email{{Email: "bob@example.com", Primary: true, Verified: true}},
		Orgs:   []string{"acme"}, Teams: []Team{{"acme", "sales"}}}
}

// Options configures New.
type Options struct {
	ClientID, ClientSecret string
	// RedirectURI is the registered callback; a loopback one matches any port.
	RedirectURI string
	// Users default to Alice and Bob.
	Users []User
}

// Server is a running test server.
type Server struct {
	// URL is the origin: idp_provider_url for the github connector (Enterprise Server form).
	URL string

	opts Options
	srv  *httptest.Server

	mu       sync.Mutex
	loginAs  string
	down     bool
	codes    map[string]grant
	tokens   map[string]grant
	requests []string
}

type grant struct {
	login, scope, challenge, redirectURI string
}

// New starts a server on 127.0.0.1; it stops when the test ends.
func New(t testing.TB, opts Options) *Server {
	t.Helper()
	if len(opts.Users) == 0 {
		opts.Users = []User{Alice(), Bob()}
	}
	s := &Server{opts: opts, loginAs: opts.Users[0].Login, codes: map[string]grant{}, tokens: map[string]grant{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /login/oauth/authorize", s.authorize)
	mux.HandleFunc("POST /login/oauth/access_token", s.accessToken)
	mux.HandleFunc("GET /api/v3/{$}", s.root)
	mux.HandleFunc("GET /api/v3/user", s.api(s.user))
	mux.HandleFunc("GET /api/v3/user/emails", s.api(s.emails))
	mux.HandleFunc("GET /api/v3/user/orgs", s.api(s.orgs))
	mux.HandleFunc("GET /api/v3/user/teams", s.api(s.teams))
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests = append(s.requests, r.Method+" "+r.URL.Path)
		down := s.down
		s.mu.Unlock()
		if down {
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
			return
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(s.srv.Close)
	s.URL = s.srv.URL
	return s
}

// Client returns an HTTP client for the server.
func (s *Server) Client() *http.Client { return s.srv.Client() }

// LoginAs makes the authorization endpoint sign in login from now on.
func (s *Server) LoginAs(login string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.loginAs = login
}

// SetDown makes every endpoint answer 503 (down) or serve again.
func (s *Server) SetDown(down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = down
}

// RevokeTokens revokes every access token of login, as a user revoking the OAuth app does:
// the API then answers 401 Bad credentials.
func (s *Server) RevokeTokens(login string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, g := range s.tokens {
		if g.login == login {
			delete(s.tokens, k)
		}
	}
}

// Requests returns "METHOD /path" of every request served so far.
func (s *Server) Requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.requests...)
}

func (s *Server) userByLogin(login string) (User, bool) {
	for _, u := range s.opts.Users {
		if u.Login == login {
			return u, true
		}
	}
	return User{}, false
}

// redirectMatches compares redirect URIs exactly, except a loopback one's port.
func (s *Server) redirectMatches(got string) bool {
	if got == s.opts.RedirectURI {
		return true
	}
	g, err1 := url.Parse(got)
	w, err2 := url.Parse(s.opts.RedirectURI)
	return err1 == nil && err2 == nil && g.Scheme == "http" && w.Scheme == "http" && g.Hostname() == "127.0.0.1" &&
		w.Hostname() == "127.0.0.1" && g.Path == w.Path && g.RawQuery == "" && g.Fragment == ""
}

func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("client_id") != s.opts.ClientID {
		http.Error(w, "unknown client_id", http.StatusNotFound)
		return
	}
	redirect := q.Get("redirect_uri")
	if redirect == "" || !s.redirectMatches(redirect) {
		http.Error(w, "The redirect_uri MUST match the registered callback URL for this application.", http.StatusBadRequest)
		return
	}
	if m := q.Get("code_challenge_method"); q.Get("code_challenge") != "" && m != "S256" {
		http.Error(w, "code_challenge_method must be S256", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	code := rand.Text()
	s.codes[code] = grant{login: s.loginAs, scope: q.Get("scope"), challenge: q.Get("code_challenge"), redirectURI: redirect}
	s.mu.Unlock()
	u, _ := url.Parse(redirect)
	v := url.Values{"code": {code}}
	if st := q.Get("state"); st != "" {
		v.Set("state", st)
	}
	u.RawQuery = v.Encode()
	http.Redirect(w, r, u.String(), http.StatusFound)
}

func (s *Server) accessToken(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	if id != s.opts.ClientID || subtle.ConstantTimeCompare([]byte(secret), []byte(s.opts.ClientSecret)) != 1 {
		tokenError(w, r, "incorrect_client_credentials", "The client_id and/or client_secret passed are incorrect.")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	code := r.PostForm.Get("code")
	g, ok := s.codes[code]
	delete(s.codes, code)
	if !ok {
		tokenError(w, r, "bad_verification_code", "The code passed is incorrect or expired.")
		return
	}
	if ru := r.PostForm.Get("redirect_uri"); ru != "" && ru != g.redirectURI {
		tokenError(w, r, "redirect_uri_mismatch", "The redirect_uri MUST match the registered callback URL for this application.")
		return
	}
	if g.challenge != "" {
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		if subtle.ConstantTimeCompare([]byte(base64.RawURLEncoding.EncodeToString(sum[:])), []byte(g.challenge)) != 1 {
			tokenError(w, r, "bad_verification_code", "The code_verifier does not match the code_challenge.")
			return
		}
	}
	token := "gho_" + rand.Text()
	s.tokens[token] = g
	// GitHub writes scopes comma-separated in the token response.
	scope := strings.Join(strings.Fields(strings.ReplaceAll(g.scope, ",", " ")), ",")
	writeToken(w, r, map[string]string{"access_token": token, "token_type": "bearer", "scope": scope})
}

// tokenError answers as GitHub does: status 200 with an error field.
func tokenError(w http.ResponseWriter, r *http.Request, code, desc string) {
	writeToken(w, r, map[string]string{"error": code, "error_description": desc, "error_uri": "https://docs.github.com/apps/troubleshooting"})
}

// writeToken answers in JSON when the client accepts it, form-encoded otherwise (GitHub's
// default).
func writeToken(w http.ResponseWriter, r *http.Request, v map[string]string) {
	w.Header().Set("Cache-Control", "no-store")
	if strings.Contains(r.Header.Get("Accept"), "application/json") {
		writeJSON(w, http.StatusOK, v)
		return
	}
	form := url.Values{}
	for k, val := range v {
		form.Set(k, val)
	}
	w.Header().Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	_, _ = w.Write([]byte(form.Encode()))
}

func (s *Server) root(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"current_user_url": s.URL + "/api/v3/user"})
}

// api authenticates the bearer token (GitHub also takes "token <t>").
func (s *Server) api(h func(http.ResponseWriter, *http.Request, User, grant)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		token, ok := strings.CutPrefix(auth, "Bearer ")
		if !ok {
			token, _ = strings.CutPrefix(auth, "token ")
		}
		s.mu.Lock()
		g, ok := s.tokens[token]
		s.mu.Unlock()
		u, known := s.userByLogin(g.login)
		if token == "" || !ok || !known {
			writeJSON(w, http.StatusUnauthorized, map[string]string{"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest"})
			return
		}
		w.Header().Set("X-OAuth-Scopes", strings.ReplaceAll(g.scope, " ", ", "))
		h(w, r, u, g)
	}
}

func hasScope(g grant, want ...string) bool {
	for _, s := range strings.Fields(strings.ReplaceAll(g.scope, ",", " ")) {
		for _, w := range want {
			if s == w {
				return true
			}
		}
	}
	return false
}

func (s *Server) user(w http.ResponseWriter, _ *http.Request, u User, _ grant) {
	var name any
	if u.Name != "" {
		name = u.Name
	}
	writeJSON(w, http.StatusOK, map[string]any{"login": u.Login, "id": u.ID, "type": "User", "name": name, "email": nil,
		"html_url": s.URL + "/" + u.Login})
}

func (s *Server) emails(w http.ResponseWriter, r *http.Request, u User, g grant) {
	if !hasScope(g, "user:email", "user") {
		writeJSON(w, http.StatusNotFound, map[string]string{"message": "Not Found", "documentation_url": "https://docs.github.com/rest"})
		return
	}
	out := make([]any, 0, len(u.Emails))
	for _, e := range u.Emails {
		out = append(out, map[string]any{"email": e.Email, "primary": e.Primary, "verified": e.Verified, "visibility": nil})
	}
	s.page(w, r, out)
}

func (s *Server) orgs(w http.ResponseWriter, r *http.Request, u User, g grant) {
	out := []any{}
	if hasScope(g, "read:org", "admin:org", "user") {
		for _, o := range u.Orgs {
			out = append(out, map[string]any{"login": o, "url": s.URL + "/api/v3/orgs/" + o})
		}
	}
	s.page(w, r, out)
}

func (s *Server) teams(w http.ResponseWriter, r *http.Request, u User, g grant) {
	if !hasScope(g, "read:org", "admin:org", "user", "repo") {
		writeJSON(w, http.StatusForbidden, map[string]string{"message": "Resource not accessible by integration", "documentation_url": "https://docs.github.com/rest"})
		return
	}
	out := make([]any, 0, len(u.Teams))
	for _, t := range u.Teams {
		out = append(out, map[string]any{"slug": t.Slug, "name": t.Slug, "organization": map[string]any{"login": t.Org}})
	}
	s.page(w, r, out)
}

// page writes one page of items: per_page (default 30, at most 100) and page (from 1), with
// a Link header naming the next and last pages when there are more.
func (s *Server) page(w http.ResponseWriter, r *http.Request, items []any) {
	q := r.URL.Query()
	per, err := strconv.Atoi(q.Get("per_page"))
	if err != nil || per <= 0 {
		per = 30
	}
	per = min(per, 100)
	page, err := strconv.Atoi(q.Get("page"))
	if err != nil || page <= 0 {
		page = 1
	}
	start := min((page-1)*per, len(items))
	end := min(start+per, len(items))
	last := max((len(items)+per-1)/per, 1)
	if page < last {
		link := func(p int) string {
			v := url.Values{"per_page": {strconv.Itoa(per)}, "page": {strconv.Itoa(p)}}
			return fmt.Sprintf("<%s%s?%s>", s.URL, r.URL.Path, v.Encode())
		}
		w.Header().Set("Link", link(page+1)+`; rel="next", `+link(last)+`; rel="last"`)
	}
	writeJSON(w, http.StatusOK, items[start:end])
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
