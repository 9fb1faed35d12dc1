package oauth

import (
	"context"
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/tokensvc/store"
)

func TestValidateAccessToken_ResourceBinding(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.register(nil)
	sess := e.newSession("alice")
	issue := func(resource string) string {
		o := url.Values{"resource": {resource}}
		if resource == "" {
			o = url.Values{"resource": nil}
		}
		code, verifier := e.authorizeCode(c, sess, o)
		f := codeForm(c, code, verifier)
		f.Del("resource")
		return tokens(t, e.token(c, f)).AccessToken
	}
	unbound, main, host := issue(""), issue(resMain), issue(issuer)
	cases := []struct {
		name, token, route string
		ok                 bool
	}{
		{"unbound at main", unbound, resMain, true},
		{"unbound at another host", unbound, resSolo, true},
		{"unbound at a client route", unbound, appOrigin, true},
		{"bound at its server", main, resMain, true},
		{"bound at a sibling server", main, resOther, false},
		{"bound at another host", main, resSolo, false},
		{"bound at a client route", main, appOrigin, false},
		{"origin-bound at main", host, resMain, true},
		{"origin-bound at sibling", host, resOther, true},
		{"origin-bound at another host", host, resSolo, false},
		{"empty token", "", resMain, false},
		{"unknown token", "nope", resMain, false},
	}
	for _, tc := range cases {
		_, err := e.srv.ValidateAccessToken(context.Background(), tc.token, tc.route)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrInvalidToken)) {
			t.Errorf("%s: err = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
	e.clock.Advance(time.Hour)
	if _, err := e.srv.ValidateAccessToken(context.Background(), unbound, resMain); !errors.Is(err, ErrInvalidToken) {
		t.Errorf("expired token: %v", err)
	}
}

func TestIssueClientToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	sess := e.newSession("alice")
	tok, exp, err := e.srv.IssueClientToken(ctx, sess)
	if err != nil {
		t.Fatal(err)
	}
	if !exp.Equal(e.clock.Now().Add(time.Hour)) {
		t.Errorf("expiry %v", exp)
	}
	at, err := e.srv.ValidateAccessToken(ctx, tok, resSolo)
	if err != nil || at.Resource != "" || at.GrantID != "" || at.SessionID != sess.ID || at.Subject != "alice" {
		t.Fatalf("token %+v, %v", at, err)
	}

	// Capped by the session's expiry.
	e.clock.Advance(14*time.Hour - 5*time.Minute)
	_, exp, err = e.srv.IssueClientToken(ctx, sess)
	if err != nil || !exp.Equal(sess.ExpiresAt) {
		t.Errorf("expiry %v, want session expiry %v (%v)", exp, sess.ExpiresAt, err)
	}
	// Not for an expired session.
	e.clock.Advance(10 * time.Minute)
	if _, _, err := e.srv.IssueClientToken(ctx, sess); err == nil {
		t.Error("token issued for an expired session")
	}
	// Signing out ends it.
	fresh := e.newSession("bob")
	tok, _, _ = e.srv.IssueClientToken(ctx, fresh)
	if err := e.st.RevokeSession(ctx, fresh.ID, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.srv.ValidateAccessToken(ctx, tok, resMain); !errors.Is(err, ErrInvalidToken) {
		t.Errorf("token of a signed-out session: %v", err)
	}
	if _, _, err := e.srv.IssueClientToken(ctx, store.Session{}); err == nil {
		t.Error("token issued for a session without ID")
	}
}
