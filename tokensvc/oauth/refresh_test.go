package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/tokensvc/store"
)

func TestToken_RefreshRotates(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.register(nil)
	_, first := e.fullFlow(c, "alice")
	e.clock.Advance(time.Minute)
	second := tokens(t, e.token(c, refreshForm(first.RefreshToken)))
	if second.RefreshToken == "" || second.RefreshToken == first.RefreshToken || second.AccessToken == first.AccessToken {
		t.Fatalf("not rotated: %+v", second)
	}
	third := tokens(t, e.token(c, refreshForm(second.RefreshToken)))
	for _, tok := range []string{first.AccessToken, second.AccessToken, third.AccessToken} {
		if _, err := e.srv.ValidateAccessToken(context.Background(), tok, resMain); err != nil {
			t.Errorf("access token of the live family refused: %v", err)
		}
	}
}

func TestToken_RefreshReuseRevokesFamily(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.register(nil)
	_, first := e.fullFlow(c, "alice")
	second := tokens(t, e.token(c, refreshForm(first.RefreshToken)))
	e.clock.Advance(config.DefaultRefreshTokenReuseInterval + time.Millisecond)

	// An attacker replays the rotated token after the reuse interval: refused, and the family dies.
	wantOAuthError(t, e.token(c, refreshForm(first.RefreshToken)), 400, errInvalidGrant)
	wantOAuthError(t, e.token(c, refreshForm(second.RefreshToken)), 400, errInvalidGrant)
	for _, tok := range []string{first.AccessToken, second.AccessToken} {
		if _, err := e.srv.ValidateAccessToken(context.Background(), tok, resMain); !errors.Is(err, ErrInvalidToken) {
			t.Errorf("access token of a revoked family still valid: %v", err)
		}
	}
}

func TestToken_RefreshByAnotherClientIsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.register(nil)
	thief := e.register(nil)
	_, tr := e.fullFlow(c, "alice")
	wantOAuthError(t, e.token(thief, refreshForm(tr.RefreshToken)), 400, errInvalidGrant)
	// The rightful client is unaffected.
	tokens(t, e.token(c, refreshForm(tr.RefreshToken)))
}

func TestToken_RefreshAfterRevocationOrSignOut(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"revocation endpoint", "sign-out", "grant expiry"} {
		t.Run(how, func(t *testing.T) {
			cfg := testConfig()
			cfg.TokenService.RefreshTokenLifetime = config.Duration(48 * time.Hour)
			e := newEnvWithConfig(t, cfg)
			c := e.register(nil)
			sess, tr := e.fullFlow(c, "alice")
			switch how {
			case "revocation endpoint":
				rec := e.postForm(issuer+paths.Revoke, url.Values{"token": {tr.RefreshToken}, "client_id": {c.ID}}, "")
				if rec.Code != 200 {
					t.Fatalf("revoke: %d", rec.Code)
				}
			case "sign-out":
				if err := e.st.RevokeSession(context.Background(), sess.ID, e.clock.Now()); err != nil {
					t.Fatal(err)
				}
			case "grant expiry":
				e.clock.Advance(48*time.Hour + time.Second)
			}
			wantOAuthError(t, e.token(c, refreshForm(tr.RefreshToken)), 400, errInvalidGrant)
			if _, err := e.srv.ValidateAccessToken(context.Background(), tr.AccessToken, resMain); !errors.Is(err, ErrInvalidToken) {
				t.Errorf("access token still valid: %v", err)
			}
		})
	}
}

func TestToken_RefreshExpiredSessionIDPRefusesIsInvalidGrant(t *testing.T) {
	t.Parallel()
	for _, refusal := range []error{
		fmt.Errorf("idp: refresh token revoked: %w", ErrIDPRefused),
		fmt.Errorf("session gone: %w", store.ErrNotFound),
	} {
		e := newEnv(t)
		e.sessions.revalidate = func(context.Context, string) (*store.Session, error) { return nil, refusal }
		c := e.register(nil)
		_, tr := e.fullFlow(c, "alice")
		e.clock.Advance(15 * time.Hour) // past cookie_expiration
		wantOAuthError(t, e.token(c, refreshForm(tr.RefreshToken)), 400, errInvalidGrant)
		if e.sessions.calls() != 1 {
			t.Errorf("Revalidate called %d times", e.sessions.calls())
		}
		// The grant is revoked: no second trip to the identity provider.
		wantOAuthError(t, e.token(c, refreshForm(tr.RefreshToken)), 400, errInvalidGrant)
		if e.sessions.calls() != 1 {
			t.Errorf("Revalidate called %d times after revocation", e.sessions.calls())
		}
	}
}

func TestToken_RefreshExpiredSessionIDPAcceptsIssuesNewTokens(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.register(nil)
	sess, tr := e.fullFlow(c, "alice")
	e.clock.Advance(15 * time.Hour)
	e.sessions.revalidate = func(ctx context.Context, id string) (*store.Session, error) {
		if id != sess.ID {
			return nil, fmt.Errorf("unexpected session %q", id)
		}
		s, err := e.st.GetSession(ctx, id)
		if err != nil {
			return nil, err
		}
		s.ExpiresAt = e.clock.Now().Add(30 * time.Minute) // the provider's new session is short
		s.Groups = []string{"renewed"}
		if _, err := e.st.UpdateSession(ctx, s); err != nil {
			return nil, err
		}
		return &s, nil
	}
	next := tokens(t, e.token(c, refreshForm(tr.RefreshToken)))
	if e.sessions.calls() != 1 || next.RefreshToken == "" {
		t.Fatalf("calls %d, response %+v", e.sessions.calls(), next)
	}
	if next.ExpiresIn != 1800 {
		t.Errorf("expires_in %d, want 1800 (capped by the renewed session)", next.ExpiresIn)
	}
	at := mustAccess(t, e, next.AccessToken)
	if at.SessionID != sess.ID || at.Subject != "alice" {
		t.Errorf("token %+v", at)
	}
	// The session is live again: the next refresh does not revalidate.
	tokens(t, e.token(c, refreshForm(next.RefreshToken)))
	if e.sessions.calls() != 1 {
		t.Errorf("Revalidate called %d times", e.sessions.calls())
	}
}

func TestToken_RefreshIDPUnavailableKeepsRefreshToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.register(nil)
	_, tr := e.fullFlow(c, "alice")
	e.clock.Advance(15 * time.Hour)
	e.sessions.revalidate = func(context.Context, string) (*store.Session, error) {
		return nil, errors.New("dial tcp: connection refused")
	}
	wantOAuthError(t, e.token(c, refreshForm(tr.RefreshToken)), 503, errTemporarilyUnavailable)
	e.sessions.revalidate = func(ctx context.Context, id string) (*store.Session, error) {
		s, err := e.st.GetSession(ctx, id)
		if err != nil {
			return nil, err
		}
		s.ExpiresAt = e.clock.Now().Add(time.Hour)
		return &s, nil
	}
	tokens(t, e.token(c, refreshForm(tr.RefreshToken))) // not rotated by the failed attempt
}

func TestToken_RefreshResourceAndScope(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.register(nil)
	sess := e.newSession("alice")
	code, verifier := e.authorizeCode(c, sess, url.Values{"scope": {"offline_access"}})
	tr := tokens(t, e.token(c, codeForm(c, code, verifier)))
	cases := []struct {
		name   string
		form   func(url.Values)
		status int
		code   string
	}{
		{"other resource", func(f url.Values) { f.Set("resource", resOther) }, 400, errInvalidTarget},
		{"resource of another host", func(f url.Values) { f.Set("resource", resSolo) }, 400, errInvalidTarget},
		{"widened scope", func(f url.Values) { f.Set("scope", "offline_access admin") }, 400, errInvalidScope},
		{"malformed scope", func(f url.Values) { f.Set("scope", "a\\b") }, 400, errInvalidScope},
		{"missing refresh token", func(f url.Values) { f.Del("refresh_token") }, 400, errInvalidRequest},
		{"unknown refresh token", func(f url.Values) { f.Set("refresh_token", "forged") }, 400, errInvalidGrant},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := refreshForm(tr.RefreshToken)
			tc.form(f)
			wantOAuthError(t, e.token(c, f), tc.status, tc.code)
		})
	}
	f := refreshForm(tr.RefreshToken)
	f.Set("scope", "")
	next := tokens(t, e.token(c, f))
	if next.Scope != "mcp" {
		t.Errorf("narrowed scope %q", next.Scope)
	}
	f = refreshForm(next.RefreshToken)
	f.Del("resource")
	if next = tokens(t, e.token(c, f)); next.Scope != "mcp offline_access" || mustAccess(t, e, next.AccessToken).Resource != resMain {
		t.Errorf("refresh without resource or scope: %+v", next)
	}
}

func TestToken_RefreshAtAnotherIssuerIsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.register(nil)
	_, tr := e.fullFlow(c, "alice")
	f := refreshForm(tr.RefreshToken)
	f.Del("resource")
	wantOAuthError(t, e.tokenAt(soloIssuer, c, f), 400, errInvalidGrant)
}
