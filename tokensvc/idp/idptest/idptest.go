package idptest

import (
	"context"
	"crypto/subtle"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/mcpmesh/gateway/tokensvc/idp"
)

// AuthURL is the fake provider's authorization endpoint: AuthCodeURL returns it with the
// flow's state as the only query parameter.
const AuthURL = "https://idp.example.com/authorize"

// Connector is a fake idp.Connector. Make it with New. Its methods are safe for concurrent
// use. Set its fields before the connector is used, or between calls that do not overlap;
// the methods read them under the connector's lock.
type Connector struct {
	// Users are the provider's accounts by subject; Login signs in only these. New fills in
	// alice (alice@example.com, "Alice", group eng, claims sub and dept) and bob
	// (bob@example.com, "Bob", claim sub).
	Users map[string]idp.Identity
	// Unavailable plays a provider that cannot be reached: AuthCodeURL, Exchange and
	// Refresh fail with idp.ErrUnavailable.
	Unavailable bool
	// ReusableCodes plays a provider that lets a code be redeemed more than once.
	ReusableCodes bool
	// SignInAs, when set, signs everyone in as this subject (one of Users) without a Login:
	// Exchange accepts any code Login did not issue, with any verifier and nonce. Codes
	// Login issued are still checked.
	SignInAs string
	// Tokens, when not zero, are the tokens Exchange returns. Otherwise Exchange returns
	// access token "at-<subject>", refresh token "rt-1" and ID token "idt".
	Tokens idp.Tokens
	// RefreshErr, when set, is what Refresh returns (the attempt is still counted).
	RefreshErr error
	// RefreshIdentity is the identity Refresh reports; zero means the provider returned
	// neither an ID token nor userinfo.
	RefreshIdentity idp.Identity
	// OnRefresh, when set, runs at the start of each Refresh, outside the connector's lock.
	OnRefresh func()

	callbackURL string

	mu          sync.Mutex
	flows       map[string]flow // state -> flow
	codes       map[string]flow // code -> flow of a login, until redeemed
	issued      int             // codes issued so far
	logins      int
	refreshes   int
	lastRefresh idp.Tokens
}

type flow struct {
	nonce, verifier, subject string
}

var _ idp.Connector = (*Connector)(nil)

// New returns a strict fake provider that redirects back to callbackURL (the gateway's
// redirect URI, <authenticate_service_url>/oauth2/callback).
func New(callbackURL string) *Connector {
	return &Connector{
		Users: map[string]idp.Identity{
			"alice": {Subject: "alice", Email: "alice@example.com", Name: "Alice", Groups: []string{"eng"}, Claims: map[string]any{"sub": "alice", "dept": "r&d"}},
			"bob":   {Subject: "bob", Email: "bob@example.com", Name: "Bob", Claims: map[string]any{"sub": "bob"}},
		},
		callbackURL: callbackURL,
		flows:       map[string]flow{},
		codes:       map[string]flow{},
	}
}

// Discover plays the provider's discovery: it fails with idp.ErrUnavailable while
// Unavailable is set.
func (c *Connector) Discover(context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.Unavailable {
		return fmt.Errorf("discover: %w", idp.ErrUnavailable)
	}
	return nil
}

// AuthCodeURL records the flow of state and returns AuthURL?state=<state>.
func (c *Connector) AuthCodeURL(_ context.Context, state, nonce, pkceVerifier string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.Unavailable {
		return "", fmt.Errorf("discover: %w", idp.ErrUnavailable)
	}
	c.flows[state] = flow{nonce: nonce, verifier: pkceVerifier}
	return AuthURL + "?state=" + url.QueryEscape(state), nil
}

// Login plays the user signing in as subject at authURL, an authorization URL AuthCodeURL
// returned, and returns the callback URL the provider redirects the browser to:
// callbackURL?code=…&state=…. Codes are code-1, code-2, … in the order Login issues them.
// An authURL that is not the provider's, a state AuthCodeURL did not record or a subject
// not in Users fails the test.
func (c *Connector) Login(t testing.TB, authURL, subject string) string {
	t.Helper()
	u, err := url.Parse(authURL)
	if err != nil || !strings.HasPrefix(authURL, AuthURL+"?") {
		t.Fatalf("idptest: not the provider's authorization URL: %q", authURL)
	}
	state := u.Query().Get("state")
	c.mu.Lock()
	defer c.mu.Unlock()
	fl, ok := c.flows[state]
	if !ok {
		t.Fatalf("idptest: unknown state at the provider")
	}
	if _, ok := c.Users[subject]; !ok {
		t.Fatalf("idptest: no user %q at the provider", subject)
	}
	fl.subject = subject
	c.issued++
	code := fmt.Sprintf("code-%d", c.issued)
	c.codes[code] = fl
	c.logins++
	return c.callbackURL + "?code=" + url.QueryEscape(code) + "&state=" + url.QueryEscape(state)
}

// Exchange redeems code. A code Login issued is spent (unless ReusableCodes) and is
// refused (idp.ErrRefused) with another verifier than its flow's; a nonce other than its
// flow's fails with idp.ErrInvalidResponse. Any other code is refused unless SignInAs is
// set.
func (c *Connector) Exchange(_ context.Context, code, pkceVerifier, nonce string) (idp.Identity, idp.Tokens, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.Unavailable {
		return idp.Identity{}, idp.Tokens{}, fmt.Errorf("exchange: %w", idp.ErrUnavailable)
	}
	fl, ok := c.codes[code]
	switch {
	case ok:
		if !c.ReusableCodes {
			delete(c.codes, code)
		}
		if subtle.ConstantTimeCompare([]byte(fl.verifier), []byte(pkceVerifier)) != 1 {
			return idp.Identity{}, idp.Tokens{}, fmt.Errorf("exchange: %w: invalid_grant", idp.ErrRefused)
		}
		if fl.nonce != nonce {
			return idp.Identity{}, idp.Tokens{}, fmt.Errorf("exchange: %w: nonce", idp.ErrInvalidResponse)
		}
	case c.SignInAs != "":
		fl.subject = c.SignInAs
	default:
		return idp.Identity{}, idp.Tokens{}, fmt.Errorf("exchange: %w: invalid_grant", idp.ErrRefused)
	}
	toks := c.Tokens
	if toks == (idp.Tokens{}) {
		toks = idp.Tokens{AccessToken: "at-" + fl.subject, RefreshToken: "rt-1", IDToken: "idt"}
	}
	return c.Users[fl.subject], toks, nil
}

// Refresh runs OnRefresh, counts the attempt and records t (LastRefresh). It returns
// RefreshErr when set, refuses (idp.ErrRefused) tokens without a refresh token, and
// otherwise returns RefreshIdentity and the tokens at-new, rt-<n+1> and idt-new, where n
// counts the attempts so far (the first refresh rotates to rt-2).
func (c *Connector) Refresh(_ context.Context, t idp.Tokens) (idp.Identity, idp.Tokens, error) {
	c.mu.Lock()
	hook := c.OnRefresh
	c.mu.Unlock()
	if hook != nil {
		hook()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refreshes++
	c.lastRefresh = t
	switch {
	case c.Unavailable:
		return idp.Identity{}, idp.Tokens{}, fmt.Errorf("refresh: %w", idp.ErrUnavailable)
	case c.RefreshErr != nil:
		return idp.Identity{}, idp.Tokens{}, c.RefreshErr
	case t.RefreshToken == "":
		return idp.Identity{}, idp.Tokens{}, fmt.Errorf("refresh: %w: no refresh token", idp.ErrRefused)
	}
	return c.RefreshIdentity, idp.Tokens{AccessToken: "at-new", RefreshToken: fmt.Sprintf("rt-%d", c.refreshes+1), IDToken: "idt-new"}, nil
}

// Logins returns how many times Login signed a user in.
func (c *Connector) Logins() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.logins
}

// Refreshes returns how many times Refresh was called.
func (c *Connector) Refreshes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.refreshes
}

// LastRefresh returns the tokens of the latest Refresh call (zero before the first).
func (c *Connector) LastRefresh() idp.Tokens {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastRefresh
}

// Outstanding reports whether code was issued by Login and can still be redeemed.
func (c *Connector) Outstanding(code string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.codes[code]
	return ok
}
