package oauth

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/mcpmesh/gateway/shared/paths"
)

// revoke posts a revocation request authenticated as c.
func (e *env) revoke(c registered, form url.Values) *httptest.ResponseRecorder {
	switch c.Method {
	case authSecretBasic:
		return e.postForm(issuer+paths.Revoke, form, "", c.ID, c.Secret)
	case authSecretPost:
		form.Set("client_secret", c.Secret)
	}
	form.Set("client_id", c.ID)
	return e.postForm(issuer+paths.Revoke, form, "")
}

func TestRevoke_RefreshTokenRevokesFamily(t *testing.T) {
	t.Parallel()
	for _, hint := range []string{"", "refresh_token", "access_token", "bogus_hint"} {
		e := newEnv(t)
		c := e.register(map[string]any{"token_endpoint_auth_method": authSecretBasic})
		_, first := e.fullFlow(c, "alice")
		second := tokens(t, e.token(c, refreshForm(first.RefreshToken)))
		f := url.Values{"token": {second.RefreshToken}}
		if hint != "" {
			f.Set("token_type_hint", hint)
		}
		rec := e.revoke(c, f)
		if rec.Code != http.StatusOK || rec.Header().Get("Cache-Control") != "no-store" {
			t.Fatalf("hint %q: status %d", hint, rec.Code)
		}
		for _, tok := range []string{first.AccessToken, second.AccessToken} {
			if _, err := e.srv.ValidateAccessToken(context.Background(), tok, resMain); !errors.Is(err, ErrInvalidToken) {
				t.Errorf("hint %q: access token survived revocation", hint)
			}
		}
		wantOAuthError(t, e.token(c, refreshForm(second.RefreshToken)), 400, errInvalidGrant)
	}
}

func TestRevoke_AccessTokenOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.register(nil)
	_, tr := e.fullFlow(c, "alice")
	if rec := e.revoke(c, url.Values{"token": {tr.AccessToken}, "token_type_hint": {"access_token"}}); rec.Code != 200 {
		t.Fatalf("status %d", rec.Code)
	}
	if _, err := e.srv.ValidateAccessToken(context.Background(), tr.AccessToken, resMain); !errors.Is(err, ErrInvalidToken) {
		t.Error("access token survived")
	}
	tokens(t, e.token(c, refreshForm(tr.RefreshToken))) // the grant lives on
}

func TestRevoke_UnknownAndForeignTokens(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.register(nil)
	other := e.register(nil)
	_, tr := e.fullFlow(c, "alice")
	for _, tok := range []string{"unknown-token", tr.RefreshToken, tr.AccessToken} {
		if rec := e.revoke(other, url.Values{"token": {tok}}); rec.Code != http.StatusOK {
			t.Fatalf("status %d", rec.Code)
		}
	}
	// Another client's tokens were left alone.
	mustAccess(t, e, tr.AccessToken)
	tokens(t, e.token(c, refreshForm(tr.RefreshToken)))
}

func TestRevoke_RequiresClientAuthentication(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.register(map[string]any{"token_endpoint_auth_method": authSecretPost})
	_, tr := e.fullFlow(c, "alice")
	wrong := c
	wrong.Secret = "wrong"
	wantOAuthError(t, e.revoke(wrong, url.Values{"token": {tr.RefreshToken}}), 401, errInvalidClient)
	wantOAuthError(t, e.postForm(issuer+paths.Revoke, url.Values{"token": {tr.RefreshToken}}, ""), 401, errInvalidClient)
	wantOAuthError(t, e.revoke(c, url.Values{}), 400, errInvalidRequest)
	if rec := e.get(issuer+paths.Revoke, ""); rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d", rec.Code)
	}
	tokens(t, e.token(c, refreshForm(tr.RefreshToken)))
}
