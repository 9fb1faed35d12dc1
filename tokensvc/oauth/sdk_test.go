package oauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/tokensvc/hosts"
	"github.com/mcpmesh/gateway/tokensvc/reqid"
	"github.com/mcpmesh/gateway/tokensvc/store"
	"github.com/mcpmesh/gateway/tokensvc/store/memory"
)

// sdkEnv is the authorization server on a real loopback HTTP listener whose
// origin is the issuer, with a stand-in MCP endpoint at /mcp that answers
// 401 with a resource_metadata challenge unless the bearer token validates.
type sdkEnv struct {
	*env
	origin, mcpURL string
}

func newSDKEnv(t *testing.T) *sdkEnv {
	t.Helper()
	ts := httptest.NewUnstartedServer(nil)
	ts.Start()
	t.Cleanup(ts.Close)
	origin := ts.URL
	cfg := testConfig()
	cfg.Routes = append(cfg.Routes, config.Route{Name: "Loopback MCP", From: origin + "/mcp", To: "http://x.internal", MCP: &config.MCP{Server: &config.MCPServer{}}})

	st := memory.New()
	clock := &testClock{t: time.Now()} // the SDK checks expiry with the real clock
	fs := &fakeSessions{st: st, clock: clock}
	srv := New(cfg, st, fs, WithClock(clock.Now))
	r := chi.NewRouter()
	r.Use(reqid.Middleware, hosts.NewTable(cfg).Middleware)
	routeForTest(r, srv)
	mcpURL := origin + "/mcp"
	r.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		tok, _ := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
		if _, err := srv.ValidateAccessToken(req.Context(), tok, mcpURL); err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+origin+paths.ProtectedResourceMetadata+`/mcp"`)
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	ts.Config.Handler = r
	e := &env{t: t, cfg: cfg, st: st, clock: clock, sessions: fs, srv: srv, handler: r}
	return &sdkEnv{env: e, origin: origin, mcpURL: mcpURL}
}

// browser plays the user's browser: it follows the authorization URL with
// the session cookie, approves the consent page and returns what the
// redirect to the client carries.
func (s *sdkEnv) browser(sessionID string) auth.AuthorizationCodeFetcher {
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, args.URL, nil)
		req.AddCookie(&http.Cookie{Name: testCookie, Value: sessionID})
		resp, err := client.Do(req)
		if err != nil {
			return nil, err
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		m := requestFieldRE.FindSubmatch(page)
		c := csrfFieldRE.FindSubmatch(page)
		if resp.StatusCode != http.StatusOK || m == nil || c == nil {
			return nil, fmt.Errorf("no consent page (status %d): %s", resp.StatusCode, page)
		}
		form := url.Values{"request": {string(m[1])}, "csrf": {string(c[1])}, "action": {"approve"}}
		req, _ = http.NewRequestWithContext(ctx, http.MethodPost, s.origin+paths.Consent, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.AddCookie(&http.Cookie{Name: testCookie, Value: sessionID})
		resp, err = client.Do(req)
		if err != nil {
			return nil, err
		}
		resp.Body.Close()
		loc, err := url.Parse(resp.Header.Get("Location"))
		if err != nil || resp.StatusCode != http.StatusSeeOther {
			return nil, fmt.Errorf("consent answered %d, Location %q", resp.StatusCode, resp.Header.Get("Location"))
		}
		q := loc.Query()
		return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
	}
}

// TestGoSDK_AuthorizationCodeFlow runs the MCP Go SDK's OAuth client
// (discovery, DCR, authorization with PKCE and resource, RFC 9207 iss check,
// code exchange) against the server, for each client authentication method,
// then refreshes with golang.org/x/oauth2.
func TestGoSDK_AuthorizationCodeFlow(t *testing.T) {
	t.Parallel()
	for _, method := range []string{authNone, authSecretBasic, authSecretPost} {
		t.Run(method, func(t *testing.T) {
			t.Parallel()
			s := newSDKEnv(t)
			sess := s.newSession("alice")
			ctx := context.Background()
			h, err := auth.NewAuthorizationCodeHandler(&auth.AuthorizationCodeHandlerConfig{
				DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
					ClientName:              "Go SDK test",
					RedirectURIs:            []string{"http://127.0.0.1:39999/callback"},
					GrantTypes:              []string{"authorization_code", "refresh_token"},
					ResponseTypes:           []string{"code"},
					TokenEndpointAuthMethod: method,
				}},
				AuthorizationCodeFetcher: s.browser(sess.ID),
				RequestRefreshToken:      true,
				Client:                   &http.Client{Timeout: 10 * time.Second},
			})
			if err != nil {
				t.Fatal(err)
			}
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.mcpURL, nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("MCP endpoint: %d", resp.StatusCode)
			}
			if err := h.Authorize(ctx, req, resp); err != nil {
				t.Fatalf("Go SDK authorization: %v", err)
			}
			src, _ := h.TokenSource(ctx)
			tok, err := src.Token()
			if err != nil {
				t.Fatal(err)
			}
			at := mustAccessAt(t, s.env, tok.AccessToken, s.mcpURL)
			if at.Resource != s.mcpURL || at.Scope != "mcp offline_access" {
				t.Errorf("token bound to %q with scope %q", at.Resource, at.Scope)
			}
			if tok.RefreshToken == "" {
				t.Fatal("no refresh token")
			}
			req, _ = http.NewRequestWithContext(ctx, http.MethodPost, s.mcpURL, nil)
			tok.SetAuthHeader(req)
			if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("MCP endpoint with the token: %v %v", resp, err)
			} else {
				resp.Body.Close()
			}
			c, _ := s.st.GetClient(ctx, at.ClientID, s.clock.Now())
			if c.TokenEndpointAuthMethod != method {
				t.Errorf("registered method %q", c.TokenEndpointAuthMethod)
			}
			if method != authNone {
				return // confidential refresh: TestXOAuth2_ConfidentialClientsRefresh
			}
			// Refresh with x/oauth2 (public client, resource parameter).
			cfg := &oauth2.Config{ClientID: at.ClientID, Endpoint: oauth2.Endpoint{TokenURL: s.origin + paths.Token, AuthStyle: oauth2.AuthStyleInParams}}
			expired := &oauth2.Token{RefreshToken: tok.RefreshToken, Expiry: time.Now().Add(-time.Minute)}
			next, err := cfg.TokenSource(ctx, expired).Token()
			if err != nil {
				t.Fatalf("x/oauth2 refresh: %v", err)
			}
			if next.RefreshToken == tok.RefreshToken || next.AccessToken == "" {
				t.Fatalf("refresh response %+v", next)
			}
			// The old refresh token is spent; replaying it after the reuse interval kills the family.
			s.clock.Advance(config.DefaultRefreshTokenReuseInterval + time.Second)
			_, err = cfg.TokenSource(ctx, expired).Token()
			var re *oauth2.RetrieveError
			if !errors.As(err, &re) || re.ErrorCode != errInvalidGrant {
				t.Fatalf("replay: %v", err)
			}
			if _, err := s.srv.ValidateAccessToken(ctx, next.AccessToken, s.mcpURL); !errors.Is(err, ErrInvalidToken) {
				t.Error("family survived a replayed refresh token")
			}
		})
	}
}

// TestXOAuth2_ConfidentialClientsRefresh checks the form-urlencoded HTTP
// Basic credentials and the post method as golang.org/x/oauth2 sends them.
func TestXOAuth2_ConfidentialClientsRefresh(t *testing.T) {
	t.Parallel()
	s := newSDKEnv(t)
	ctx := context.Background()
	for _, tc := range []struct {
		method string
		style  oauth2.AuthStyle
	}{{authSecretBasic, oauth2.AuthStyleInHeader}, {authSecretPost, oauth2.AuthStyleInParams}} {
		reg, err := oauthex.RegisterClient(ctx, s.origin+paths.Register, &oauthex.ClientRegistrationMetadata{
			RedirectURIs: []string{"http://127.0.0.1:39999/callback"}, TokenEndpointAuthMethod: tc.method,
			GrantTypes: []string{"authorization_code", "refresh_token"},
		}, http.DefaultClient)
		if err != nil {
			t.Fatalf("%s: register: %v", tc.method, err)
		}
		if reg.TokenEndpointAuthMethod != tc.method || reg.ClientSecret == "" {
			t.Fatalf("%s: registration %+v", tc.method, reg)
		}
		c := registered{ID: reg.ClientID, Secret: reg.ClientSecret, Method: tc.method, RedirectURI: "http://127.0.0.1:39999/callback"}
		sess := s.newSession("bob")
		code, verifier := s.authorizeCodeAt(s.origin, c, sess, url.Values{"resource": {s.mcpURL}})
		cfg := &oauth2.Config{
			ClientID: reg.ClientID, ClientSecret: reg.ClientSecret, RedirectURL: c.RedirectURI,
			Endpoint: oauth2.Endpoint{TokenURL: s.origin + paths.Token, AuthStyle: tc.style},
		}
		tok, err := cfg.Exchange(ctx, code, oauth2.VerifierOption(verifier), oauth2.SetAuthURLParam("resource", s.mcpURL))
		if err != nil {
			t.Fatalf("%s: exchange: %v", tc.method, err)
		}
		next, err := cfg.TokenSource(ctx, &oauth2.Token{RefreshToken: tok.RefreshToken, Expiry: time.Now().Add(-time.Minute)}).Token()
		if err != nil || next.AccessToken == "" {
			t.Fatalf("%s: refresh: %v", tc.method, err)
		}
		mustAccessAt(t, s.env, next.AccessToken, s.mcpURL)
	}
}

// mustAccessAt validates tok at routeID.
func mustAccessAt(t testing.TB, e *env, tok, routeID string) store.AccessToken {
	t.Helper()
	at, err := e.srv.ValidateAccessToken(context.Background(), tok, routeID)
	if err != nil {
		t.Fatalf("validate at %s: %v", routeID, err)
	}
	return at
}
