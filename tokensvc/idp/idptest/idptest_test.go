package idptest_test

import (
	"context"
	"errors"
	"net/url"
	"runtime"
	"sync"
	"testing"

	"github.com/mcpmesh/gateway/tokensvc/idp"
	"github.com/mcpmesh/gateway/tokensvc/idp/idptest"
)

const callback = "https://auth.example.com/oauth2/callback"

// login starts a flow with state, nonce and verifier and signs alice in; it returns the code.
func login(t *testing.T, c *idptest.Connector, state, nonce, verifier string) string {
	t.Helper()
	authURL, err := c.AuthCodeURL(context.Background(), state, nonce, verifier)
	if err != nil {
		t.Fatal(err)
	}
	cb, err := url.Parse(c.Login(t, authURL, "alice"))
	if err != nil {
		t.Fatal(err)
	}
	q := cb.Query()
	if cb.RawQuery = ""; cb.String() != callback || q.Get("state") != state || q.Get("code") == "" {
		t.Fatalf("callback %s with %v, want %s with state %q and a code", cb, q, callback, state)
	}
	return q.Get("code")
}

func TestExchange_RedeemsALoginOnce(t *testing.T) {
	t.Parallel()
	c := idptest.New(callback)
	code := login(t, c, "st", "n", "v")
	ident, toks, err := c.Exchange(context.Background(), code, "v", "n")
	if err != nil || ident.Subject != "alice" || ident.Email != "alice@example.com" || toks.RefreshToken != "rt-1" {
		t.Fatalf("exchange: %+v %+v %v", ident, toks, err)
	}
	if c.Logins() != 1 || c.Outstanding(code) {
		t.Errorf("logins %d, code outstanding %v", c.Logins(), c.Outstanding(code))
	}
	if _, _, err := c.Exchange(context.Background(), code, "v", "n"); !errors.Is(err, idp.ErrRefused) {
		t.Errorf("reused code: %v, want idp.ErrRefused", err)
	}
}

func TestExchange_RefusesWrongVerifierAndNonce(t *testing.T) {
	t.Parallel()
	c := idptest.New(callback)
	code := login(t, c, "st", "n", "v")
	if _, _, err := c.Exchange(context.Background(), code, "other", "n"); !errors.Is(err, idp.ErrRefused) {
		t.Errorf("wrong verifier: %v, want idp.ErrRefused", err)
	}
	if _, _, err := c.Exchange(context.Background(), code, "v", "n"); !errors.Is(err, idp.ErrRefused) {
		t.Errorf("the code of a refused exchange: %v, want idp.ErrRefused (spent)", err)
	}
	code = login(t, c, "st2", "n", "v")
	if _, _, err := c.Exchange(context.Background(), code, "v", "other"); !errors.Is(err, idp.ErrInvalidResponse) {
		t.Errorf("wrong nonce: %v, want idp.ErrInvalidResponse", err)
	}
	if _, _, err := c.Exchange(context.Background(), "code-99", "v", "n"); !errors.Is(err, idp.ErrRefused) {
		t.Errorf("unknown code: %v, want idp.ErrRefused", err)
	}
}

func TestExchange_ReusableCodes(t *testing.T) {
	t.Parallel()
	c := idptest.New(callback)
	c.ReusableCodes = true
	code := login(t, c, "st", "n", "v")
	for range 2 {
		if _, _, err := c.Exchange(context.Background(), code, "v", "n"); err != nil {
			t.Fatal(err)
		}
	}
}

func TestExchange_ConcurrentRedemptionsOfOneCode(t *testing.T) {
	t.Parallel()
	c := idptest.New(callback)
	code := login(t, c, "st", "n", "v")
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for range 8 {
		wg.Go(func() {
			if _, _, err := c.Exchange(context.Background(), code, "v", "n"); err == nil {
				mu.Lock()
				ok++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if ok != 1 {
		t.Fatalf("%d redemptions succeeded, want 1", ok)
	}
}

func TestSignInAsAndTokens(t *testing.T) {
	t.Parallel()
	c := idptest.New(callback)
	c.SignInAs = "bob"
	c.Tokens = idp.Tokens{AccessToken: "a", RefreshToken: "r"}
	ident, toks, err := c.Exchange(context.Background(), "anything", "", "")
	if err != nil || ident.Subject != "bob" || toks != c.Tokens {
		t.Fatalf("exchange: %+v %+v %v", ident, toks, err)
	}
	// Codes Login issued are still checked.
	code := login(t, c, "st", "n", "v")
	if _, _, err := c.Exchange(context.Background(), code, "other", "n"); !errors.Is(err, idp.ErrRefused) {
		t.Errorf("wrong verifier: %v, want idp.ErrRefused", err)
	}
}

func TestUnavailable(t *testing.T) {
	t.Parallel()
	c := idptest.New(callback)
	c.Unavailable = true
	if _, err := c.AuthCodeURL(context.Background(), "st", "n", "v"); !errors.Is(err, idp.ErrUnavailable) {
		t.Errorf("AuthCodeURL: %v", err)
	}
	if _, _, err := c.Exchange(context.Background(), "code-1", "v", "n"); !errors.Is(err, idp.ErrUnavailable) {
		t.Errorf("Exchange: %v", err)
	}
	if _, _, err := c.Refresh(context.Background(), idp.Tokens{RefreshToken: "rt-1"}); !errors.Is(err, idp.ErrUnavailable) {
		t.Errorf("Refresh: %v", err)
	}
}

func TestRefresh(t *testing.T) {
	t.Parallel()
	c := idptest.New(callback)
	hooked := 0
	c.OnRefresh = func() { hooked++ }
	_, toks, err := c.Refresh(context.Background(), idp.Tokens{RefreshToken: "rt-1"})
	if err != nil || toks.RefreshToken != "rt-2" || c.LastRefresh().RefreshToken != "rt-1" {
		t.Fatalf("refresh: %+v %v (last %+v)", toks, err, c.LastRefresh())
	}
	if _, _, err := c.Refresh(context.Background(), idp.Tokens{}); !errors.Is(err, idp.ErrRefused) {
		t.Errorf("no refresh token: %v, want idp.ErrRefused", err)
	}
	c.RefreshErr = errors.New("boom")
	if _, _, err := c.Refresh(context.Background(), idp.Tokens{RefreshToken: "rt-2"}); err != c.RefreshErr {
		t.Errorf("RefreshErr: %v", err)
	}
	if c.Refreshes() != 3 || hooked != 3 {
		t.Errorf("refreshes %d, hook ran %d times, want 3", c.Refreshes(), hooked)
	}
}

// fatalRecorder is a testing.TB whose Fatalf records the failure and ends the goroutine.
type fatalRecorder struct {
	testing.TB
	failed bool
}

func (r *fatalRecorder) Helper() {}
func (r *fatalRecorder) Fatalf(string, ...any) {
	r.failed = true
	runtime.Goexit()
}

func TestLogin_FailsTheTest(t *testing.T) {
	t.Parallel()
	c := idptest.New(callback)
	authURL, err := c.AuthCodeURL(context.Background(), "st", "n", "v")
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct{ authURL, subject string }{
		"unknown state":          {idptest.AuthURL + "?state=forged", "alice"},
		"not the provider's URL": {"https://evil.example.com/authorize?state=st", "alice"},
		"unknown user":           {authURL, "mallory"},
	} {
		r := &fatalRecorder{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			c.Login(r, tc.authURL, tc.subject)
		}()
		<-done
		if !r.failed {
			t.Errorf("%s: Login did not fail the test", name)
		}
	}
	if c.Logins() != 0 {
		t.Errorf("logins = %d, want 0", c.Logins())
	}
}
