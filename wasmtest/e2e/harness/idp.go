package harness

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// IDPClient is a client registered statically with the test OpenID provider.
type IDPClient struct {
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret,omitempty"`
	// RedirectURIs are compared exactly, except that http://127.0.0.1 and http://[::1]
	// redirect URIs match any port (RFC 8252 section 7.3), so a gateway whose port is only
	// known after it starts can register http://127.0.0.1/its/callback/path.
	RedirectURIs []string `json:"redirect_uris"`
	// TokenEndpointAuthMethod defaults to client_secret_basic with a secret, none without.
	TokenEndpointAuthMethod string `json:"token_endpoint_auth_method,omitempty"`
	// GrantTypes defaults to authorization_code and refresh_token.
	GrantTypes []string `json:"grant_types,omitempty"`
}

// IDPUser is a test account of the OpenID provider; its fields are the claims it returns.
type IDPUser struct {
	Sub           string   `json:"sub"`
	Email         string   `json:"email,omitempty"`
	EmailVerified bool     `json:"email_verified"`
	Name          string   `json:"name,omitempty"`
	Groups        []string `json:"groups"`
	// Claims are added to (or replace) the user's claims: azure's tid, apple's
	// email_verified as a string.
	Claims map[string]any `json:"claims,omitempty"`
}

// Alice returns the default test user, the one the provider logs in unless told otherwise:
// sub "alice", alice@example.com (verified), name "Alice Example", groups ["engineering"].
func Alice() IDPUser {
	return IDPUser{Sub: "alice", Email: "alice@example.com", EmailVerified: true, Name: "Alice Example", Groups: []string{"engineering"}}
}

// Bob returns the second test user: sub "bob", bob@example.com (verified), name
// "Bob Example", groups ["sales"].
func Bob() IDPUser {
	return IDPUser{Sub: "bob", Email: "bob@example.com", EmailVerified: true, Name: "Bob Example", Groups: []string{"sales"}}
}

// IDPOptions configures StartIDP. The zero value gives one confidential client
// (ClientID "gateway-e2e", a random secret, redirect URI http://127.0.0.1/oauth2/callback on any
// port) and the users Alice (who logs in) and Bob.
type IDPOptions struct {
	Clients []IDPClient
	// Users; the first is logged in automatically (see IDP.LoginAs).
	Users []IDPUser
	// ConsentForm shows an HTML consent form (buttons action=approve / action=deny) instead
	// of granting consent automatically.
	ConsentForm bool
	// AccessTokenTTL, IDTokenTTL, RefreshTokenTTL default to 1h, 1h, 24h.
	AccessTokenTTL, IDTokenTTL, RefreshTokenTTL time.Duration
	// Registration enables open dynamic client registration, and Resources lists the RFC 8707
	// resource indicator prefixes it issues JWT access tokens for (audience = the resource,
	// scopes ResourceScope, default "mcp"). Together they let the provider act as an MCP
	// authorization server in the harness's own tests.
	Registration  bool
	Resources     []string
	ResourceScope string
	// IssuerPath plays a provider whose issuer has a path (okta /oauth2/default, azure
	// /<tenant>/v2.0, cognito /<pool-id>, onelogin /oidc/2, ping /<env>/as); "/" gives an
	// issuer ending in a slash (auth0). GroupsClaim names the claim of the users' groups
	// (default groups; cognito:groups), and ScopeClaims replaces which scope releases which
	// claims (default openid: sub; email: email, email_verified; profile: name; groups: the
	// groups claim).
	IssuerPath  string
	GroupsClaim string
	ScopeClaims map[string][]string
	// StrictClientAuth makes the token endpoint accept each client only with its registered
	// TokenEndpointAuthMethod (oidc-provider itself accepts client_secret_basic and
	// client_secret_post interchangeably).
	StrictClientAuth bool
}

// DefaultRedirectURI is the redirect URI of the default IDP client.
const DefaultRedirectURI = "http://127.0.0.1/oauth2/callback"

// IDP is a running test OpenID provider (wasmtest/e2e/node/idp.mjs).
type IDP struct {
	// Issuer is http://127.0.0.1:PORT followed by IDPOptions.IssuerPath; discovery is at
	// the Issuer without a trailing slash + "/.well-known/openid-configuration".
	Issuer string
	// ClientID, ClientSecret and RedirectURIs are those of the first client.
	ClientID, ClientSecret string
	RedirectURIs           []string
	// Clients are all static clients, with generated secrets filled in.
	Clients []IDPClient

	adminToken string
	proc       *process
}

type idpConfig struct {
	Port            int                 `json:"port"`
	Clients         []IDPClient         `json:"clients"`
	Users           []IDPUser           `json:"users"`
	ConsentForm     bool                `json:"consentForm"`
	AccessTokenTTL  int64               `json:"accessTokenTTL,omitempty"`
	IDTokenTTL      int64               `json:"idTokenTTL,omitempty"`
	RefreshTokenTTL int64               `json:"refreshTokenTTL,omitempty"`
	Registration    bool                `json:"registration"`
	Resources       []string            `json:"resources,omitempty"`
	ResourceScope   string              `json:"resourceScope,omitempty"`
	AdminToken      string              `json:"adminToken"`
	IssuerPath      string              `json:"issuerPath,omitempty"`
	GroupsClaim     string              `json:"groupsClaim,omitempty"`
	ScopeClaims     map[string][]string `json:"scopeClaims,omitempty"`
	StrictClient    bool                `json:"strictClientAuth,omitempty"`
}

// StartIDP starts the test OpenID provider on a free 127.0.0.1 port and waits until it
// serves. It is stopped when the test ends.
func StartIDP(t testing.TB, opts IDPOptions) *IDP {
	t.Helper()
	node := Node22Bin(t)
	script := nodeScript(t, "idp.mjs")
	clients := append([]IDPClient(nil), opts.Clients...)
	if len(clients) == 0 {
		clients = []IDPClient{{ClientID: "gateway-e2e", ClientSecret: rand.Text(), RedirectURIs: []string{DefaultRedirectURI}}}
	}
	users := append([]IDPUser(nil), opts.Users...)
	if len(users) == 0 {
		users = []IDPUser{Alice(), Bob()}
	}
	for i := range users {
		if users[i].Groups == nil {
			users[i].Groups = []string{}
		}
	}
	cfg := idpConfig{
		Clients:         clients,
		Users:           users,
		ConsentForm:     opts.ConsentForm,
		AccessTokenTTL:  int64(opts.AccessTokenTTL / time.Second),
		IDTokenTTL:      int64(opts.IDTokenTTL / time.Second),
		RefreshTokenTTL: int64(opts.RefreshTokenTTL / time.Second),
		Registration:    opts.Registration,
		Resources:       opts.Resources,
		ResourceScope:   opts.ResourceScope,
		AdminToken:      rand.Text(),
		IssuerPath:      opts.IssuerPath,
		GroupsClaim:     opts.GroupsClaim,
		ScopeClaims:     opts.ScopeClaims,
		StrictClient:    opts.StrictClientAuth,
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatalf("harness: encode IDP config: %v", err)
	}
	cmd := exec.Command(node, script)
	cmd.Dir = NodeDir(t)
	// The config holds client secrets: pass it in the environment, not on the command line.
	cmd.Env = childEnv("IDP_CONFIG=" + string(raw))
	p, issuer := startProcess(t, "idp", cmd, func(line string) (string, bool) {
		v, ok := strings.CutPrefix(line, "READY ")
		return strings.TrimSpace(v), ok
	}, 30*time.Second)
	if _, err := url.Parse(issuer); err != nil || !strings.HasPrefix(issuer, "http://127.0.0.1:") {
		t.Fatalf("harness: IDP printed a bad issuer %q", issuer)
	}
	return &IDP{
		Issuer:       issuer,
		ClientID:     clients[0].ClientID,
		ClientSecret: clients[0].ClientSecret,
		RedirectURIs: clients[0].RedirectURIs,
		Clients:      clients,
		adminToken:   cfg.AdminToken,
		proc:         p,
	}
}

// Disable disables the account sub and revokes its grants: its refresh tokens are refused
// with invalid_grant and new logins as sub end with access_denied.
func (p *IDP) Disable(t testing.TB, sub string) {
	t.Helper()
	p.hook(t, "disable", sub)
}

// Enable re-enables a disabled account (revoked grants stay revoked).
func (p *IDP) Enable(t testing.TB, sub string) {
	t.Helper()
	p.hook(t, "enable", sub)
}

// Revoke revokes every grant of sub (its refresh tokens are refused with invalid_grant) but
// leaves the account usable.
func (p *IDP) Revoke(t testing.TB, sub string) {
	t.Helper()
	p.hook(t, "revoke", sub)
}

// LoginAs makes the automatic login pick sub from now on. A browser that already has a session
// cookie at the provider stays logged in as before: use a new Browser.
func (p *IDP) LoginAs(t testing.TB, sub string) {
	t.Helper()
	p.hook(t, "login-as", sub)
}

// SetDown makes every endpoint of the provider but the test hooks answer 503 (down), or serve
// again (up).
func (p *IDP) SetDown(t testing.TB, down bool) {
	t.Helper()
	op := "up"
	if down {
		op = "down"
	}
	p.hook(t, op, "")
}

func (p *IDP) hook(t testing.TB, op, sub string) {
	t.Helper()
	if err := p.callHook(op, sub); err != nil {
		t.Fatalf("harness: IDP %s %s: %v", op, sub, err)
	}
}

func (p *IDP) callHook(op, sub string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	iu, err := url.Parse(p.Issuer)
	if err != nil {
		return err
	}
	u := iu.Scheme + "://" + iu.Host + "/test/" + op + "?sub=" + url.QueryEscape(sub)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, nil)
	if err != nil {
		return fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+p.adminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("call test hook: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("test hook answered %d: %s", resp.StatusCode, body)
	}
	return nil
}
