package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/shared/paths"
)

const (
	appSecret     = "app-secret-0123456789abcdef0123456789"
	serviceSecret = "svc-secret-0123456789abcdef0123456789"
	appCB         = "https://portal.example.com/cb"
)

// configuredConfig is testConfig with pre-registered clients: a public desktop app, a
// confidential portal that asks for consent and may use resMain only, a service identity for
// resMain, and a public client that (invalidly at the token endpoint) claims
// client_credentials.
func configuredConfig() *config.Config {
	cfg := testConfig()
	cfg.MCPClients = []config.OAuthClient{
		{ClientID: "desktop", Name: "Desktop App", TokenEndpointAuthMethod: authNone, RedirectURIs: []string{loopbackCB}, GrantTypes: []string{"authorization_code", "refresh_token"}},
		{ClientID: "portal", Name: "Portal", SecretResolved: appSecret, TokenEndpointAuthMethod: authSecretBasic, RedirectURIs: []string{appCB}, GrantTypes: []string{"authorization_code", "refresh_token"}, RouteIDs: []string{resMain}, Consent: true},
		{ClientID: "ci-agent", Name: "CI agent", SecretResolved: serviceSecret, TokenEndpointAuthMethod: authSecretPost, GrantTypes: []string{"client_credentials"}, RouteIDs: []string{resMain}},
		{ClientID: "two-routes", SecretResolved: serviceSecret, TokenEndpointAuthMethod: authSecretBasic, GrantTypes: []string{"client_credentials"}, RouteIDs: []string{resMain, resSolo}},
	}
	return cfg
}

func TestConfigured_PublicClientWithoutConsentGetsCodeDirectly(t *testing.T) {
	t.Parallel()
	e := newEnvWithConfig(t, configuredConfig())
	c := registered{ID: "desktop", Method: authNone, RedirectURI: loopbackCB}
	sess := e.newSession("alice")
	verifier, challenge := pkce()
	rec := e.get(issuer+paths.Authorize+"?"+authParams(c, challenge).Encode(), sess.ID)
	if rec.Code != http.StatusFound {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	q := location(t, rec).Query()
	if q.Get("code") == "" || q.Get("iss") != issuer {
		t.Fatalf("Location %s", rec.Header().Get("Location"))
	}
	tr := tokens(t, e.token(c, codeForm(c, q.Get("code"), verifier)))
	if tr.RefreshToken == "" || tr.Scope != "mcp" {
		t.Errorf("token response %+v", tr)
	}
}

func TestConfigured_ConsentAndAllowedRoutes(t *testing.T) {
	t.Parallel()
	e := newEnvWithConfig(t, configuredConfig())
	c := registered{ID: "portal", Secret: appSecret, Method: authSecretBasic, RedirectURI: appCB}
	sess := e.newSession("alice")
	_, challenge := pkce()

	// The operator asked for consent: the page names the client without "chosen by the
	// application".
	rec := e.get(issuer+paths.Authorize+"?"+authParams(c, challenge).Encode(), sess.ID)
	consentHandle(t, rec)
	if body := rec.Body.String(); !strings.Contains(body, "Portal") || strings.Contains(body, "chosen by the application") {
		t.Errorf("consent page: %s", body)
	}

	// A route outside its list is refused, and the error goes back to the configured client.
	p := authParams(c, challenge)
	p.Set("resource", resOther)
	rec = e.get(issuer+paths.Authorize+"?"+p.Encode(), sess.ID)
	if q := location(t, rec).Query(); q.Get("error") != errInvalidTarget {
		t.Fatalf("resource outside the list: %s", rec.Header().Get("Location"))
	}
	// No resource: bound to its only route.
	code, verifier := e.authorizeCode(c, sess, url.Values{"resource": nil})
	f := codeForm(c, code, verifier)
	f.Del("resource")
	tr := tokens(t, e.token(c, f))
	ctx := context.Background()
	if at, err := e.srv.ValidateAccessToken(ctx, tr.AccessToken, resMain); err != nil || at.Resource != resMain {
		t.Fatalf("at its route: %+v %v", at, err)
	}
	if _, err := e.srv.ValidateAccessToken(ctx, tr.AccessToken, resOther); !errors.Is(err, ErrInvalidToken) {
		t.Errorf("accepted at another route: %v", err)
	}
	// Its only route is on another host than this authorization server: refused at once.
	p = authParams(c, challenge)
	p.Del("resource")
	rec = e.get(soloIssuer+paths.Authorize+"?"+p.Encode(), sess.ID)
	if q := location(t, rec).Query(); q.Get("error") != errInvalidTarget {
		t.Errorf("default resource on another host: %s", rec.Header().Get("Location"))
	}
	// A wrong secret is invalid_client.
	bad := c
	bad.Secret = "wrong"
	wantOAuthError(t, e.token(bad, refreshForm(tr.RefreshToken)), 401, errInvalidClient)
	tokens(t, e.token(c, refreshForm(tr.RefreshToken)))
}

func TestClientCredentials_ServiceIdentity(t *testing.T) {
	t.Parallel()
	e := newEnvWithConfig(t, configuredConfig())
	svc := registered{ID: "ci-agent", Secret: serviceSecret, Method: authSecretPost}
	form := func(kv ...string) url.Values {
		f := url.Values{"grant_type": {"client_credentials"}}
		for i := 0; i+1 < len(kv); i += 2 {
			f.Add(kv[i], kv[i+1])
		}
		return f
	}
	rec := e.token(svc, form("resource", resMain+"/"))
	tr := tokens(t, rec)
	if tr.RefreshToken != "" || tr.Scope != "mcp" || tr.TokenType != "Bearer" || tr.ExpiresIn != 3600 {
		t.Fatalf("response %s", rec.Body)
	}
	var raw map[string]any
	_ = json.Unmarshal(rec.Body.Bytes(), &raw)
	if _, has := raw["refresh_token"]; has {
		t.Error("a refresh_token member")
	}
	ctx := context.Background()
	at, err := e.srv.ValidateAccessToken(ctx, tr.AccessToken, resMain)
	if err != nil || at.Subject != "client:ci-agent" || at.SessionID != "" || at.ClientID != "ci-agent" || !IsServiceToken(at) {
		t.Fatalf("token %+v, %v", at, err)
	}
	for _, other := range []string{resOther, resSolo} {
		if _, err := e.srv.ValidateAccessToken(ctx, tr.AccessToken, other); !errors.Is(err, ErrInvalidToken) {
			t.Errorf("service token accepted at %s", other)
		}
	}
	// Its only route is the default resource.
	tokens(t, e.token(svc, form()))
	// Once the client is no longer configured (a reload), its tokens are refused.
	reloaded := configuredConfig()
	reloaded.MCPClients = reloaded.MCPClients[:2]
	e2 := New(reloaded, e.st, e.sessions, WithClock(e.clock.Now))
	if _, err := e2.ValidateAccessToken(ctx, tr.AccessToken, resMain); !errors.Is(err, ErrInvalidToken) {
		t.Errorf("token of a removed service client: %v", err)
	}

	cases := []struct {
		name   string
		client registered
		origin string
		form   url.Values
		status int
		code   string
	}{
		{"route outside its list", svc, issuer, form("resource", resOther), 400, errInvalidTarget},
		{"the host's origin", svc, issuer, form("resource", issuer), 400, errInvalidTarget},
		{"route of another host", svc, issuer, form("resource", resSolo), 400, errInvalidTarget},
		{"look-alike host", svc, issuer, form("resource", "https://mcp.example.com.evil.net/mcp"), 400, errInvalidTarget},
		{"two routes", svc, issuer, form("resource", resMain, "resource", resOther), 400, errInvalidTarget},
		{"its route at another issuer", svc, soloIssuer, form(), 400, errInvalidTarget},
		{"wrong secret", registered{ID: "ci-agent", Secret: "nope", Method: authSecretPost}, issuer, form(), 401, errInvalidClient},
		{"no secret", registered{ID: "ci-agent", Method: authNone}, issuer, form(), 401, errInvalidClient},
		{"two routes, none named", registered{ID: "two-routes", Secret: serviceSecret, Method: authSecretBasic}, issuer, form(), 400, errInvalidTarget},
		{"public configured client", registered{ID: "desktop", Method: authNone}, issuer, form(), 400, errUnauthorizedClient},
		{"malformed scope", svc, issuer, form("scope", "a\"b"), 400, errInvalidScope},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wantOAuthError(t, e.tokenAt(tc.origin, tc.client, tc.form), tc.status, tc.code)
		})
	}
	t.Run("dynamically registered client", func(t *testing.T) {
		c := e.register(map[string]any{"token_endpoint_auth_method": "client_secret_basic"})
		wantOAuthError(t, e.token(c, form("resource", resMain)), 400, errUnauthorizedClient)
	})
	t.Run("registration refuses client_credentials", func(t *testing.T) {
		b, _ := json.Marshal(map[string]any{"redirect_uris": []string{loopbackCB}, "grant_types": []string{"authorization_code", "client_credentials"}})
		req, _ := http.NewRequest(http.MethodPost, issuer+paths.Register, strings.NewReader(string(b)))
		req.Header.Set("Content-Type", "application/json")
		wantOAuthError(t, e.do(req), 400, errInvalidClientMetadata)
	})
	t.Run("metadata advertises the grant", func(t *testing.T) {
		var m asMetadata
		_ = json.Unmarshal(e.get(issuer+paths.AuthorizationServerMetadata, "").Body.Bytes(), &m)
		if !strings.Contains(strings.Join(m.GrantTypesSupported, " "), "client_credentials") {
			t.Errorf("grant_types_supported %v", m.GrantTypesSupported)
		}
	})
}

// serviceEvents counts the token events.
type serviceEvents struct {
	noEvents
	mu              sync.Mutex
	service, issued int
}

func (e *serviceEvents) ServiceTokenIssued() { e.mu.Lock(); e.service++; e.mu.Unlock() }
func (e *serviceEvents) TokensIssued()       { e.mu.Lock(); e.issued++; e.mu.Unlock() }

func TestClientCredentials_CountedAsServiceTokens(t *testing.T) {
	t.Parallel()
	ev := &serviceEvents{}
	e := newEnvWithConfig(t, configuredConfig(), WithEvents(ev))
	tokens(t, e.token(registered{ID: "ci-agent", Secret: serviceSecret, Method: authSecretPost}, url.Values{"grant_type": {"client_credentials"}}))
	if ev.service != 1 || ev.issued != 0 {
		t.Errorf("service tokens %d, authorization-code tokens %d; want 1, 0", ev.service, ev.issued)
	}
}
