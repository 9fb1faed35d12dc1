package oauth

import (
	"bytes"
	"context"
	"errors"
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
	"github.com/mcpmesh/gateway/tokensvc/store"
)

func TestToken_AuthorizationCodeFlowIssuesBoundTokens(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.register(nil)
	sess := e.newSession("alice")
	code, verifier := e.authorizeCode(c, sess, url.Values{"scope": {"offline_access"}})
	rec := e.token(c, codeForm(c, code, verifier))
	tr := tokens(t, rec)
	h := rec.Header()
	if h.Get("Content-Type") != "application/json" || h.Get("Cache-Control") != "no-store" || h.Get("Pragma") != "no-cache" {
		t.Errorf("headers %v", h)
	}
	if tr.TokenType != "Bearer" || tr.ExpiresIn != 3600 || tr.AccessToken == "" || tr.RefreshToken == "" || tr.Scope != "mcp offline_access" {
		t.Fatalf("response %+v", tr)
	}
	ctx := context.Background()
	at, err := e.srv.ValidateAccessToken(ctx, tr.AccessToken, resMain)
	if err != nil {
		t.Fatalf("validate at its resource: %v", err)
	}
	if at.ClientID != c.ID || at.SessionID != sess.ID || at.Subject != "alice" || at.Resource != resMain || at.GrantID == "" {
		t.Errorf("stored token %+v", at)
	}
	for _, other := range []string{resOther, resSolo} {
		if _, err := e.srv.ValidateAccessToken(ctx, tr.AccessToken, other); !errors.Is(err, ErrInvalidToken) {
			t.Errorf("token for %s accepted at %s: %v", resMain, other, err)
		}
	}
}

func TestToken_NoRefreshTokenWithoutRefreshGrant(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.register(map[string]any{"grant_types": []string{"authorization_code"}})
	_, tr := e.fullFlow(c, "alice")
	if tr.RefreshToken != "" {
		t.Fatal("refresh token issued to a client without the refresh_token grant")
	}
	wantOAuthError(t, e.token(c, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"x"}}), 400, errUnauthorizedClient)
}

func TestToken_AuthorizationCodeAttacks(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.register(nil)
	other := e.register(nil)
	sess := e.newSession("alice")
	cases := []struct {
		name   string
		attack func(code, verifier string) *httptest.ResponseRecorder
		status int
		code   string
	}{
		{"replay", func(code, verifier string) *httptest.ResponseRecorder {
			tokens(t, e.token(c, codeForm(c, code, verifier)))
			return e.token(c, codeForm(c, code, verifier))
		}, 400, errInvalidGrant},
		{"another client", func(code, verifier string) *httptest.ResponseRecorder {
			f := codeForm(c, code, verifier)
			return e.token(other, f)
		}, 400, errInvalidGrant},
		{"wrong verifier", func(code, _ string) *httptest.ResponseRecorder {
			v, _ := pkce()
			return e.token(c, codeForm(c, code, v))
		}, 400, errInvalidGrant},
		{"missing verifier", func(code, _ string) *httptest.ResponseRecorder {
			f := codeForm(c, code, "")
			f.Del("code_verifier")
			return e.token(c, f)
		}, 400, errInvalidGrant},
		{"verifier equal to challenge (plain downgrade)", func(code, verifier string) *httptest.ResponseRecorder {
			return e.token(c, codeForm(c, code, pkceChallenge(verifier)))
		}, 400, errInvalidGrant},
		{"wrong redirect", func(code, verifier string) *httptest.ResponseRecorder {
			f := codeForm(c, code, verifier)
			f.Set("redirect_uri", "http://127.0.0.1:33418/other")
			return e.token(c, f)
		}, 400, errInvalidGrant},
		{"loopback port differs from authorize request", func(code, verifier string) *httptest.ResponseRecorder {
			f := codeForm(c, code, verifier)
			f.Set("redirect_uri", "http://127.0.0.1:1/callback")
			return e.token(c, f)
		}, 400, errInvalidGrant},
		{"missing redirect", func(code, verifier string) *httptest.ResponseRecorder {
			f := codeForm(c, code, verifier)
			f.Del("redirect_uri")
			return e.token(c, f)
		}, 400, errInvalidGrant},
		{"other resource", func(code, verifier string) *httptest.ResponseRecorder {
			f := codeForm(c, code, verifier)
			f.Set("resource", resOther)
			return e.token(c, f)
		}, 400, errInvalidTarget},
		{"redeemed at another issuer", func(code, verifier string) *httptest.ResponseRecorder {
			f := codeForm(c, code, verifier)
			f.Del("resource")
			return e.tokenAt(soloIssuer, c, f)
		}, 400, errInvalidGrant},
		{"unknown code", func(_, verifier string) *httptest.ResponseRecorder {
			return e.token(c, codeForm(c, "forged", verifier))
		}, 400, errInvalidGrant},
		{"missing code", func(_, verifier string) *httptest.ResponseRecorder {
			f := codeForm(c, "", verifier)
			f.Del("code")
			return e.token(c, f)
		}, 400, errInvalidRequest},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, verifier := e.authorizeCode(c, sess, nil)
			wantOAuthError(t, tc.attack(code, verifier), tc.status, tc.code)
			if tc.name == "unknown code" || tc.name == "missing code" {
				return // the attack did not present the real code
			}
			// A redeemed code stays spent; a refused attempt leaves the code to its
			// rightful client (check, then spend).
			if tc.name == "replay" {
				wantOAuthError(t, e.token(c, codeForm(c, code, verifier)), 400, errInvalidGrant)
				return
			}
			tokens(t, e.token(c, codeForm(c, code, verifier)))
		})
	}
}

func TestToken_ExpiredCodeIsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.register(nil)
	sess := e.newSession("alice")
	code, verifier := e.authorizeCode(c, sess, nil)
	e.clock.Advance(61 * time.Second)
	wantOAuthError(t, e.token(c, codeForm(c, code, verifier)), 400, errInvalidGrant)
}

func TestToken_CodeAfterSignOutIsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.register(nil)
	sess := e.newSession("alice")
	code, verifier := e.authorizeCode(c, sess, nil)
	if err := e.st.RevokeSession(context.Background(), sess.ID, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	wantOAuthError(t, e.token(c, codeForm(c, code, verifier)), 400, errInvalidGrant)
}

func TestToken_ConcurrentRedemptionsExactlyOneWins(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.register(nil)
	sess := e.newSession("alice")
	for round := 0; round < 5; round++ {
		code, verifier := e.authorizeCode(c, sess, nil)
		const n = 16
		var wg sync.WaitGroup
		statuses := make(chan int, n)
		start := make(chan struct{})
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				statuses <- e.token(c, codeForm(c, code, verifier)).Code
			}()
		}
		close(start)
		wg.Wait()
		close(statuses)
		ok := 0
		for s := range statuses {
			if s == http.StatusOK {
				ok++
			} else if s != http.StatusBadRequest {
				t.Errorf("unexpected status %d", s)
			}
		}
		if ok != 1 {
			t.Fatalf("round %d: %d redemptions succeeded, want exactly 1", round, ok)
		}
	}
}

func TestToken_ClientAuthentication(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	basic := e.register(map[string]any{"token_endpoint_auth_method": authSecretBasic})
	post := e.register(map[string]any{"token_endpoint_auth_method": authSecretPost})
	public := e.register(nil)
	sess := e.newSession("alice")

	type send func(f url.Values) *httptest.ResponseRecorder
	withBasic := func(id, sec string) send {
		return func(f url.Values) *httptest.ResponseRecorder {
			return e.postForm(issuer+paths.Token, f, "", id, sec)
		}
	}
	withBody := func(id string, sec *string) send {
		return func(f url.Values) *httptest.ResponseRecorder {
			f.Set("client_id", id)
			if sec != nil {
				f.Set("client_secret", *sec)
			}
			return e.postForm(issuer+paths.Token, f, "")
		}
	}
	str := func(s string) *string { return &s }
	cases := []struct {
		name      string
		client    registered
		send      send
		status    int
		code      string
		challenge bool
	}{
		{"basic, right secret", basic, withBasic(basic.ID, basic.Secret), 200, "", false},
		{"basic, wrong secret", basic, withBasic(basic.ID, "wrong"), 401, errInvalidClient, true},
		{"basic, empty secret", basic, withBasic(basic.ID, ""), 401, errInvalidClient, true},
		{"basic client without secret", basic, withBody(basic.ID, nil), 401, errInvalidClient, true},
		{"basic client using post", basic, withBody(basic.ID, str(basic.Secret)), 401, errInvalidClient, true},
		{"post, right secret", post, withBody(post.ID, str(post.Secret)), 200, "", false},
		{"post, wrong secret", post, withBody(post.ID, str("wrong")), 401, errInvalidClient, false},
		{"post client without secret", post, withBody(post.ID, nil), 401, errInvalidClient, false},
		{"post client using basic", post, withBasic(post.ID, post.Secret), 401, errInvalidClient, true},
		{"post client with another client's secret", post, withBody(post.ID, str(basic.Secret)), 401, errInvalidClient, false},
		{"public client", public, withBody(public.ID, nil), 200, "", false},
		{"public client sending a secret", public, withBody(public.ID, str("x")), 401, errInvalidClient, false},
		{"public client via basic", public, withBasic(public.ID, ""), 401, errInvalidClient, true},
		{"unknown client", public, withBody("nope", nil), 401, errInvalidClient, false},
		{"no client at all", public, func(f url.Values) *httptest.ResponseRecorder {
			return e.postForm(issuer+paths.Token, f, "")
		}, 401, errInvalidClient, false},
		{"basic and body secret together", basic, func(f url.Values) *httptest.ResponseRecorder {
			f.Set("client_secret", basic.Secret)
			return e.postForm(issuer+paths.Token, f, "", basic.ID, basic.Secret)
		}, 400, errInvalidRequest, false},
		{"basic and a different body client_id", basic, func(f url.Values) *httptest.ResponseRecorder {
			f.Set("client_id", public.ID)
			return e.postForm(issuer+paths.Token, f, "", basic.ID, basic.Secret)
		}, 400, errInvalidRequest, false},
		{"bearer scheme", basic, func(f url.Values) *httptest.ResponseRecorder {
			req := httptest.NewRequest(http.MethodPost, issuer+paths.Token, strings.NewReader(f.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Authorization", "Bearer "+basic.Secret)
			return e.do(req)
		}, 401, errInvalidClient, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, verifier := e.authorizeCode(tc.client, sess, nil)
			f := codeForm(tc.client, code, verifier)
			f.Del("client_id")
			rec := tc.send(f)
			if tc.status == 200 {
				tokens(t, rec)
				return
			}
			wantOAuthError(t, rec, tc.status, tc.code)
			if got := rec.Header().Get("WWW-Authenticate") != ""; got != tc.challenge {
				t.Errorf("WWW-Authenticate present = %v, want %v", got, tc.challenge)
			}
			if strings.Contains(rec.Body.String(), tc.client.Secret) && tc.client.Secret != "" {
				t.Error("error body echoes the secret")
			}
		})
	}
}

func TestToken_RequestErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.register(nil)
	post := func(ct, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, issuer+paths.Token, strings.NewReader(body))
		req.Header.Set("Content-Type", ct)
		return e.do(req)
	}
	form := "client_id=" + url.QueryEscape(c.ID)
	cases := []struct {
		name   string
		rec    *httptest.ResponseRecorder
		status int
		code   string
	}{
		{"GET", e.get(issuer+paths.Token+"?grant_type=authorization_code", ""), 405, errInvalidRequest},
		{"JSON body", post("application/json", `{"grant_type":"authorization_code"}`), 400, errInvalidRequest},
		{"no grant_type", post("application/x-www-form-urlencoded", form), 400, errInvalidRequest},
		{"unsupported grant", post("application/x-www-form-urlencoded", form+"&grant_type=password"), 400, errUnsupportedGrantType},
		{"client credentials of a client not registered for them", post("application/x-www-form-urlencoded", form+"&grant_type=client_credentials"), 400, errUnauthorizedClient},
		{"repeated parameter", post("application/x-www-form-urlencoded", form+"&grant_type=authorization_code&grant_type=refresh_token"), 400, errInvalidRequest},
		{"oversized body", post("application/x-www-form-urlencoded", form+"&x="+strings.Repeat("a", maxBodyBytes)), 400, errInvalidRequest},
		{"charset parameter is fine", post("application/x-www-form-urlencoded; charset=utf-8", form+"&grant_type=x"), 400, errUnsupportedGrantType},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { wantOAuthError(t, tc.rec, tc.status, tc.code) })
	}
}

func TestToken_AccessTokenNeverOutlivesSession(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.register(nil)
	sess := e.newSession("alice")
	e.clock.Advance(14*time.Hour - 10*time.Minute)
	code, verifier := e.authorizeCode(c, sess, nil)
	tr := tokens(t, e.token(c, codeForm(c, code, verifier)))
	if tr.ExpiresIn != 600 {
		t.Fatalf("expires_in %d, want 600 (the session's remaining life)", tr.ExpiresIn)
	}
}

func TestToken_NarrowingAnUnboundCodeToOneServer(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.register(nil)
	sess := e.newSession("alice")
	code, verifier := e.authorizeCode(c, sess, url.Values{"resource": nil})
	f := codeForm(c, code, verifier)
	f.Set("resource", resOther)
	tr := tokens(t, e.token(c, f))
	if _, err := e.srv.ValidateAccessToken(context.Background(), tr.AccessToken, resMain); !errors.Is(err, ErrInvalidToken) {
		t.Error("narrowed token accepted at another server")
	}
	// The refresh grant stays unbound: a refresh without resource yields an unbound token.
	tr = tokens(t, e.token(c, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tr.RefreshToken}}))
	if _, err := e.srv.ValidateAccessToken(context.Background(), tr.AccessToken, resSolo); err != nil {
		t.Errorf("unbound token refused: %v", err)
	}
}

func TestToken_ResponseNeverLeaksIntoErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.register(nil)
	const probe = "SECRETPROBEVALUE1234567890"
	for _, f := range []url.Values{
		{"grant_type": {"authorization_code"}, "code": {probe}, "code_verifier": {probe + probe}, "redirect_uri": {loopbackCB}},
		{"grant_type": {"refresh_token"}, "refresh_token": {probe}},
	} {
		rec := e.token(c, f)
		if strings.Contains(rec.Body.String(), probe) {
			t.Errorf("error response echoes a token: %s", rec.Body)
		}
	}
}

// refreshForm is a refresh request.
func refreshForm(rt string) url.Values {
	return url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "resource": {resMain}}
}

func TestToken_ExpiresInOfZeroLifetimeFallsBackToDefault(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.TokenService = config.TokenService{}
	e := newEnvWithConfig(t, cfg)
	c := e.register(nil)
	_, tr := e.fullFlow(c, "alice")
	if tr.ExpiresIn != 3600 {
		t.Errorf("expires_in %d", tr.ExpiresIn)
	}
	g, err := e.st.ListGrantsBySession(context.Background(), mustAccess(t, e, tr.AccessToken).SessionID)
	if err != nil || len(g) != 1 || !g[0].ExpiresAt.Equal(store.Time(e.clock.Now().Add(30*24*time.Hour))) {
		t.Errorf("grants %+v, %v", g, err)
	}
}

func mustAccess(t testing.TB, e *env, tok string) store.AccessToken {
	t.Helper()
	at, err := e.srv.ValidateAccessToken(context.Background(), tok, resMain)
	if err != nil {
		t.Fatal(err)
	}
	return at
}

func TestToken_CodeReplayRevokesTokensIssuedForIt(t *testing.T) {
	t.Parallel()
	for _, grants := range [][]string{{"authorization_code", "refresh_token"}, {"authorization_code"}} {
		e := newEnv(t)
		c := e.register(map[string]any{"grant_types": grants})
		sess := e.newSession("alice")
		code, verifier := e.authorizeCode(c, sess, nil)
		tr := tokens(t, e.token(c, codeForm(c, code, verifier)))
		mustAccess(t, e, tr.AccessToken)
		e.clock.Advance(30 * time.Second)
		wantOAuthError(t, e.token(c, codeForm(c, code, verifier)), 400, errInvalidGrant)
		if _, err := e.srv.ValidateAccessToken(context.Background(), tr.AccessToken, resMain); !errors.Is(err, ErrInvalidToken) {
			t.Errorf("grants %v: access token survived the code replay", grants)
		}
		if tr.RefreshToken != "" {
			wantOAuthError(t, e.token(c, refreshForm(tr.RefreshToken)), 400, errInvalidGrant)
		}
	}
}

func TestToken_SecretsNeverReachTheLog(t *testing.T) {
	t.Parallel()
	var buf syncBuffer
	e := newEnv(t, WithLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	c := e.register(map[string]any{"token_endpoint_auth_method": authSecretBasic})
	sess := e.newSession("alice")
	code, verifier := e.authorizeCode(c, sess, nil)
	tr := tokens(t, e.token(c, codeForm(c, code, verifier)))
	next := tokens(t, e.token(c, refreshForm(tr.RefreshToken)))
	e.clock.Advance(config.DefaultRefreshTokenReuseInterval + time.Second)
	wantOAuthError(t, e.token(c, refreshForm(tr.RefreshToken)), 400, errInvalidGrant) // reuse, logged
	wantOAuthError(t, e.token(c, codeForm(c, code, verifier)), 400, errInvalidGrant)  // replay, logged
	bad := c
	bad.Secret = "wrong-secret-value"
	wantOAuthError(t, e.token(bad, refreshForm(next.RefreshToken)), 401, errInvalidClient)
	log := buf.String()
	if !strings.Contains(log, "grant revoked") {
		t.Fatalf("expected reuse to be logged:\n%s", log)
	}
	for name, s := range map[string]string{
		"client secret": c.Secret, "code": code, "verifier": verifier, "access token": tr.AccessToken,
		"refresh token": tr.RefreshToken, "next refresh token": next.RefreshToken, "presented secret": bad.Secret,
	} {
		if strings.Contains(log, s) {
			t.Errorf("the log contains the %s", name)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
