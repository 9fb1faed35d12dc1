package idp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/oauth2"

	"github.com/mcpmesh/gateway/shared/config"
)

// GitHub is the Connector of idp_provider github: plain OAuth 2.0 (GitHub is not an OpenID
// provider) and GitHub's REST API for the identity (docs/idp/github.md):
//
//   - sub is the account's numeric id (GET /user), which never changes; login is a claim;
//   - email is the primary address of GET /user/emails, and only when it is verified;
//   - groups are the organisations of GET /user/orgs ("acme") and the teams of GET
//     /user/teams ("acme/platform"), every page (bounded by MaxGitHubPages);
//   - an OAuth app issues no refresh token: Refresh re-reads the identity with the stored
//     access token while GitHub accepts it, and reports ErrRefused (the MCP client then gets
//     invalid_grant) once GitHub answers 401. A GitHub App with expiring user tokens does
//     issue one, and Refresh then uses it.
//
// GitHub Enterprise Server is idp_provider_url: its origin serves the OAuth endpoints and
// the API under /api/v3.
type GitHub struct {
	web      string // origin of the OAuth endpoints
	api      string // REST API base, without trailing slash
	provider config.Provider
	oauth    *oauth2.Config
	params   map[string]string
	client   *http.Client
	opts     options
	health   *health

	mu     sync.Mutex
	everUp bool
}

var _ Connector = (*GitHub)(nil)

// MaxGitHubPages bounds the pages of organisations and of teams read per sign-in (100
// entries a page).
const MaxGitHubPages = 10

func newGitHub(origin string, provider config.Provider, cfg *config.Config, client *http.Client, o options) (*GitHub, error) {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return nil, configError("idp_provider_url", fmt.Sprintf("want the origin of GitHub Enterprise Server, got %q", origin))
	}
	web := u.Scheme + "://" + strings.ToLower(u.Host)
	api := web + "/api/v3"
	if web == config.GitHubIssuer {
		api = "https://api.github.com"
	}
	g := &GitHub{
		web: web, api: api, provider: provider, params: cfg.EffectiveIDPRequestParams(), client: client, opts: o,
		oauth: &oauth2.Config{
			ClientID:     cfg.IDPClientID,
			ClientSecret: cfg.IDPClientSecretResolved,
			Endpoint: oauth2.Endpoint{
				AuthURL:   web + "/login/oauth/authorize",
				TokenURL:  web + "/login/oauth/access_token",
				AuthStyle: oauth2.AuthStyleInParams,
			},
			RedirectURL: redirectURL(cfg.AuthenticateServiceURL),
			Scopes:      cfg.EffectiveIDPScopes(),
		},
	}
	g.health = newHealth(o, func(ctx context.Context) error { return probe(ctx, client, api+"/") })
	return g, nil
}

// Issuer returns the web origin whose OAuth endpoints the connector uses.
func (g *GitHub) Issuer() string { return g.web }

// APIBase returns the REST API base the connector reads the identity from.
func (g *GitHub) APIBase() string { return g.api }

// Discover returns nil once GitHub has answered at least once (readiness).
func (g *GitHub) Discover(ctx context.Context) error {
	g.mu.Lock()
	up := g.everUp
	g.mu.Unlock()
	if up {
		return nil
	}
	if err := g.health.check(ctx); err != nil {
		return err
	}
	g.mu.Lock()
	g.everUp = true
	g.mu.Unlock()
	return nil
}

// AuthCodeURL implements Connector. GitHub has no nonce (no ID token); the PKCE S256
// challenge is sent.
func (g *GitHub) AuthCodeURL(ctx context.Context, state, _, pkceVerifier string) (string, error) {
	if err := g.health.check(ctx); err != nil {
		return "", err
	}
	opts := make([]oauth2.AuthCodeOption, 0, len(g.params)+1)
	for k, v := range g.params {
		if protocolParam(k) {
			continue
		}
		opts = append(opts, oauth2.SetAuthURLParam(k, v))
	}
	opts = append(opts, oauth2.S256ChallengeOption(pkceVerifier))
	return g.oauth.AuthCodeURL(state, opts...), nil
}

// Exchange implements Connector: the code for an access token, then the identity from the
// API.
func (g *GitHub) Exchange(ctx context.Context, code, pkceVerifier, _ string) (Identity, Tokens, error) {
	tok, err := g.oauth.Exchange(ctx2(ctx, g.client), code, oauth2.VerifierOption(pkceVerifier))
	if err != nil {
		return Identity{}, Tokens{}, fmt.Errorf("exchange code: %w", g.health.seen(classify(err)))
	}
	id, err := g.identity(ctx, tok.AccessToken)
	if err != nil {
		return Identity{}, Tokens{}, err
	}
	return id, tokensFrom(tok, ""), nil
}

// Refresh implements Connector: with a refresh token (a GitHub App's expiring user token)
// it refreshes; without one it re-reads the identity with the stored access token.
func (g *GitHub) Refresh(ctx context.Context, t Tokens) (Identity, Tokens, error) {
	if t.RefreshToken != "" {
		tok, err := g.oauth.TokenSource(ctx2(ctx, g.client), &oauth2.Token{RefreshToken: t.RefreshToken}).Token()
		if err != nil {
			return Identity{}, Tokens{}, fmt.Errorf("refresh: %w", g.health.seen(classify(err)))
		}
		t = tokensFrom(tok, "")
	}
	if t.AccessToken == "" {
		return Identity{}, Tokens{}, fmt.Errorf("refresh: %w: no GitHub access token is stored", ErrRefused)
	}
	id, err := g.identity(ctx, t.AccessToken)
	if err != nil {
		return Identity{}, Tokens{}, fmt.Errorf("refresh: %w", err)
	}
	return id, t, nil
}

func ctx2(ctx context.Context, client *http.Client) context.Context {
	return context.WithValue(ctx, oauth2.HTTPClient, client)
}

// githubUser is the part of GET /user the gateway reads.
type githubUser struct {
	ID    int64  `json:"id"`
	Login string `json:"login"`
	Name  string `json:"name"`
}

// identity reads the user, the primary verified address and the groups.
func (g *GitHub) identity(ctx context.Context, token string) (Identity, error) {
	var u githubUser
	if _, err := g.get(ctx, token, "/user", &u); err != nil {
		return Identity{}, err
	}
	if u.ID <= 0 || u.Login == "" {
		return Identity{}, fmt.Errorf("%w: GET /user named no account", ErrInvalidResponse)
	}
	claims := map[string]any{"sub": strconv.FormatInt(u.ID, 10), "login": u.Login}
	if u.Name != "" {
		claims["name"] = u.Name
	}
	var emails []struct {
		Email    string `json:"email"`
		Primary  bool   `json:"primary"`
		Verified bool   `json:"verified"`
	}
	if _, err := g.get(ctx, token, "/user/emails?per_page=100", &emails); err != nil {
		if !errors.Is(err, errGitHubForbidden) {
			return Identity{}, err
		}
		g.opts.logger.WarnContext(ctx, "github: the token may not read the user's addresses (add user:email to idp_scopes); signing in without an address")
	}
	for _, e := range emails {
		if e.Primary && e.Verified && e.Email != "" {
			claims["email"], claims["email_verified"] = e.Email, true
		}
	}
	groups, err := g.groups(ctx, token)
	if err != nil {
		return Identity{}, err
	}
	claims["groups"] = groups
	id := Identity{Subject: claims["sub"].(string), Name: u.Name, Groups: stringList(groups), Claims: claims}
	if id.Name == "" {
		id.Name = u.Login
	}
	if e, ok := claims["email"].(string); ok {
		id.Email = e
	}
	return id, nil
}

// groups lists "org" for every organisation and "org/team-slug" for every team, reading
// every page up to MaxGitHubPages of each.
func (g *GitHub) groups(ctx context.Context, token string) ([]any, error) {
	seen := map[string]bool{}
	var out []any
	add := func(s string) {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	type org struct {
		Login string `json:"login"`
	}
	for page := 1; ; page++ {
		var orgs []org
		more, err := g.get(ctx, token, "/user/orgs?per_page=100&page="+strconv.Itoa(page), &orgs)
		if errors.Is(err, errGitHubForbidden) {
			g.opts.logger.WarnContext(ctx, "github: the token may not list organisations (add read:org to idp_scopes and grant the OAuth app access to the organisation)")
			break
		}
		if err != nil {
			return nil, err
		}
		for _, o := range orgs {
			add(o.Login)
		}
		if !more {
			break
		}
		if page == MaxGitHubPages {
			g.opts.logger.WarnContext(ctx, "github: more organisations than read; groups are incomplete", "pages", page)
			break
		}
	}
	for page := 1; ; page++ {
		var teams []struct {
			Slug string `json:"slug"`
			Org  org    `json:"organization"`
		}
		more, err := g.get(ctx, token, "/user/teams?per_page=100&page="+strconv.Itoa(page), &teams)
		if errors.Is(err, errGitHubForbidden) {
			break
		}
		if err != nil {
			return nil, err
		}
		for _, t := range teams {
			if t.Org.Login != "" && t.Slug != "" {
				add(t.Org.Login)
				add(t.Org.Login + "/" + t.Slug)
			}
		}
		if !more {
			break
		}
		if page == MaxGitHubPages {
			g.opts.logger.WarnContext(ctx, "github: more teams than read; groups are incomplete", "pages", page)
			break
		}
	}
	if out == nil {
		out = []any{}
	}
	return out, nil
}

// errGitHubForbidden is a 403 or 404 of an API call the token's scopes do not cover.
var errGitHubForbidden = errors.New("github: not permitted")

// get GETs path of the API with token and decodes a 200 answer into v. It reports whether
// the Link header names a next page. 401 is ErrRefused (GitHub no longer accepts the token),
// 403 and 404 errGitHubForbidden, 5xx and network errors ErrUnavailable.
func (g *GitHub) get(ctx context.Context, token, path string, v any) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, g.api+path, nil)
	if err != nil {
		return false, err
	}
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := g.client.Do(req)
	if err != nil {
		return false, g.health.seen(fmt.Errorf("github %s: %w: %v", pathOnly(path), ErrUnavailable, err))
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		g.health.seen(nil)
		return false, fmt.Errorf("github %s: %w: GitHub no longer accepts the access token", pathOnly(path), ErrRefused)
	case resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusNotFound:
		g.health.seen(nil)
		return false, fmt.Errorf("github %s: %w (status %d)", pathOnly(path), errGitHubForbidden, resp.StatusCode)
	case resp.StatusCode >= 500:
		return false, g.health.seen(fmt.Errorf("github %s: %w: status %d", pathOnly(path), ErrUnavailable, resp.StatusCode))
	case resp.StatusCode != http.StatusOK:
		return false, fmt.Errorf("github %s: %w: status %d", pathOnly(path), ErrInvalidResponse, resp.StatusCode)
	}
	g.health.seen(nil)
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return false, fmt.Errorf("github %s: %w: %v", pathOnly(path), ErrInvalidResponse, err)
	}
	return hasNextLink(resp.Header.Values("Link")), nil
}

func pathOnly(p string) string {
	path, _, _ := strings.Cut(p, "?")
	return path
}

// hasNextLink reports whether Link headers (RFC 8288, as GitHub sends them) have a
// rel="next" link.
func hasNextLink(values []string) bool {
	for _, v := range values {
		for _, link := range strings.Split(v, ",") {
			_, params, ok := strings.Cut(link, ";")
			if !ok {
				continue
			}
			for _, p := range strings.Split(params, ";") {
				k, val, _ := strings.Cut(strings.TrimSpace(p), "=")
				if strings.EqualFold(k, "rel") {
					for _, rel := range strings.Fields(strings.Trim(val, `"`)) {
						if rel == "next" {
							return true
						}
					}
				}
			}
		}
	}
	return false
}

// protocolParam reports whether idp_request_params key k is one the connector sets itself;
// configuration never overrides those.
func protocolParam(k string) bool {
	switch k {
	case "state", "nonce", "code_challenge", "code_challenge_method", "client_id", "redirect_uri", "response_type", "scope":
		return true
	}
	return false
}
