package config

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mcpmesh/gateway/shared/pluginconf"
	"github.com/mcpmesh/gateway/shared/redirecturi"
)

// OAuthClient is an OAuth client the operator registers with the gateway's MCP authorization
// server (mcp_clients; docs/configuration.md "Pre-registered MCP clients"): the MCP
// authorization specification's first choice, before client ID metadata documents and
// dynamic registration.
type OAuthClient struct {
	// ClientID is the client_id the client sends: 1 to 128 characters of A-Z a-z 0-9 . _ ~ -.
	ClientID string `yaml:"client_id"`
	// Name is shown on the consent page and in logs.
	Name string `yaml:"name"`
	// ClientSecretFile and ClientSecretEnv name where the secret of a confidential client is
	// (a file, or an environment variable of the token service); at most one. Without either
	// the client is public.
	ClientSecretFile string `yaml:"client_secret_file"`
	ClientSecretEnv  string `yaml:"client_secret_env"`
	// TokenEndpointAuthMethod is client_secret_basic (default with a secret) or
	// client_secret_post for a confidential client, none for a public one.
	TokenEndpointAuthMethod string `yaml:"token_endpoint_auth_method"`
	// ApplicationType is web or native (OpenID Connect registration); empty applies only the
	// general redirect URI rule.
	ApplicationType string `yaml:"application_type"`
	// RedirectURIs are the client's redirect URIs (required with authorization_code).
	RedirectURIs []string `yaml:"redirect_uris"`
	// Routes are the `from` URLs of the mcp.server routes the client may obtain tokens for;
	// empty means every one. Required with client_credentials.
	Routes []string `yaml:"routes"`
	// Consent shows the consent page to the user before a code is issued (default false: the
	// operator vouches for the client).
	Consent bool `yaml:"consent"`
	// GrantTypes are authorization_code, refresh_token and client_credentials (default:
	// authorization_code and refresh_token).
	GrantTypes []string `yaml:"grant_types"`

	// SecretResolved is the secret read from ClientSecretFile or ClientSecretEnv.
	SecretResolved string `yaml:"-"`
	// RouteIDs are the normalised Routes (config.Route.Normalized().ID).
	RouteIDs []string `yaml:"-"`
}

// Grant types and authentication methods of mcp_clients.
const (
	GrantAuthorizationCode = "authorization_code"
	GrantRefreshToken      = "refresh_token"
	GrantClientCredentials = "client_credentials"
	AuthNone               = "none"
	AuthClientSecretBasic  = "client_secret_basic"
	AuthClientSecretPost   = "client_secret_post"
)

// MinClientSecretLen is the shortest secret accepted for a pre-registered client.
const MinClientSecretLen = 32

// Confidential reports whether the client authenticates with a secret.
func (o *OAuthClient) Confidential() bool {
	return o.ClientSecretFile != "" || o.ClientSecretEnv != ""
}

// resolveOAuthClientEnv reads the secrets of mcp_clients that name an environment variable.
// Parse calls it with its LookupEnv; an unset or empty variable is reported by Validate.
func (c *Config) resolveOAuthClientEnv(env LookupEnv) {
	if env == nil {
		return
	}
	for i := range c.MCPClients {
		o := &c.MCPClients[i]
		if o.ClientSecretEnv != "" && o.ClientSecretFile == "" {
			if v, ok := env(o.ClientSecretEnv); ok {
				o.SecretResolved = strings.TrimRight(v, "\r\n")
			}
		}
	}
}

// validateOAuthClients checks mcp_clients, fills in defaults, reads secret files and resolves
// the routes.
func (c *Config) validateOAuthClients(e *Error) {
	if len(c.MCPClients) > 0 && !c.MCPEnabled() {
		e.add("mcp_clients", "requires runtime_flags.mcp: true")
	}
	servers := map[string]bool{}  // mcp.server route IDs
	upstream := map[string]bool{} // those with upstream_oauth2 or upstream_discovery
	for i := range c.Routes {
		if rt := &c.Routes[i]; rt.RouteKind() == pluginconf.KindServer {
			servers[rt.Normalized().ID] = true
			upstream[rt.Normalized().ID] = rt.MCP.Server.HasUpstream()
		}
	}
	seen := map[string]int{}
	for i := range c.MCPClients {
		o := &c.MCPClients[i]
		key := "mcp_clients[" + strconv.Itoa(i) + "]"
		switch {
		case o.ClientID == "":
			e.add(key+".client_id", "is required")
		case !validClientID(o.ClientID):
			e.add(key+".client_id", "must be 1 to 128 characters of A-Z a-z 0-9 . _ ~ -, got %q", o.ClientID)
		default:
			if j, dup := seen[o.ClientID]; dup {
				e.add(key+".client_id", "duplicates mcp_clients[%d].client_id", j)
			}
			seen[o.ClientID] = i
		}
		if !utf8.ValidString(o.Name) || utf8.RuneCountInString(o.Name) > 200 || strings.ContainsFunc(o.Name, func(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) }) {
			e.add(key+".name", "must be at most 200 characters of text without control or format (bidirectional) characters")
		}
		o.validateSecret(e, key)
		o.validateGrants(e, key)
		for j, u := range o.RedirectURIs {
			if err := redirecturi.ValidateFor(u, o.ApplicationType); err != nil {
				e.add(key+".redirect_uris["+strconv.Itoa(j)+"]", "%v", err)
			}
		}
		if a := o.ApplicationType; a != "" && a != redirecturi.AppWeb && a != redirecturi.AppNative {
			e.add(key+".application_type", "must be web or native, got %q", a)
		}
		if slices.Contains(o.GrantTypes, GrantAuthorizationCode) && len(o.RedirectURIs) == 0 {
			e.add(key+".redirect_uris", "is required with the authorization_code grant")
		}
		if !slices.Contains(o.GrantTypes, GrantAuthorizationCode) && len(o.RedirectURIs) > 0 {
			e.add(key+".redirect_uris", "is only used with the authorization_code grant")
		}
		o.RouteIDs = nil
		for j, r := range o.Routes {
			k := key + ".routes[" + strconv.Itoa(j) + "]"
			n, msg := NormalizeFrom(r)
			switch {
			case msg != "":
				e.add(k, "%s", msg)
			case !servers[n.ID]:
				e.add(k, "is not the from of an mcp.server route (%s)", n.ID)
			case upstream[n.ID] && slices.Contains(o.GrantTypes, GrantClientCredentials):
				e.add(k, "has upstream_oauth2, which needs a user's upstream account: a client_credentials client (a service identity) cannot use it")
			default:
				o.RouteIDs = append(o.RouteIDs, n.ID)
			}
		}
		if slices.Contains(o.GrantTypes, GrantClientCredentials) && len(o.Routes) == 0 {
			e.add(key+".routes", "is required with the client_credentials grant: name the MCP server routes the service may call")
		}
	}
}

func (o *OAuthClient) validateSecret(e *Error, key string) {
	switch {
	case o.ClientSecretFile != "" && o.ClientSecretEnv != "":
		e.add(key+".client_secret_file", "set either client_secret_file or client_secret_env, not both")
		return
	case o.ClientSecretFile != "":
		b, err := os.ReadFile(o.ClientSecretFile)
		if err != nil {
			e.add(key+".client_secret_file", "cannot read: %v", err)
			return
		}
		o.SecretResolved = strings.TrimRight(string(b), "\r\n")
		if len(o.SecretResolved) < MinClientSecretLen {
			e.add(key+".client_secret_file", "the secret must be at least %d characters (e.g. `openssl rand -hex 32`)", MinClientSecretLen)
		}
	case o.ClientSecretEnv != "":
		if o.SecretResolved == "" {
			e.add(key+".client_secret_env", "environment variable %s is not set or empty", o.ClientSecretEnv)
		} else if len(o.SecretResolved) < MinClientSecretLen {
			e.add(key+".client_secret_env", "the secret in %s must be at least %d characters", o.ClientSecretEnv, MinClientSecretLen)
		}
	}
	switch m := o.TokenEndpointAuthMethod; {
	case m == "" && o.Confidential():
		o.TokenEndpointAuthMethod = AuthClientSecretBasic
	case m == "":
		o.TokenEndpointAuthMethod = AuthNone
	case m == AuthNone && o.Confidential():
		e.add(key+".token_endpoint_auth_method", "is none, but the client has a secret: use client_secret_basic or client_secret_post, or remove the secret")
	case (m == AuthClientSecretBasic || m == AuthClientSecretPost) && !o.Confidential():
		e.add(key+".token_endpoint_auth_method", "%s needs client_secret_file or client_secret_env", m)
	case m != AuthNone && m != AuthClientSecretBasic && m != AuthClientSecretPost:
		e.add(key+".token_endpoint_auth_method", "must be none, client_secret_basic or client_secret_post, got %q", m)
	}
}

func (o *OAuthClient) validateGrants(e *Error, key string) {
	if len(o.GrantTypes) == 0 {
		o.GrantTypes = []string{GrantAuthorizationCode, GrantRefreshToken}
	}
	for j, g := range o.GrantTypes {
		switch g {
		case GrantAuthorizationCode, GrantRefreshToken:
		case GrantClientCredentials:
			if !o.Confidential() {
				e.add(key+".grant_types["+strconv.Itoa(j)+"]", "client_credentials needs a confidential client (client_secret_file or client_secret_env)")
			}
		default:
			e.add(key+".grant_types["+strconv.Itoa(j)+"]", "must be authorization_code, refresh_token or client_credentials, got %q", g)
		}
	}
	if slices.Contains(o.GrantTypes, GrantRefreshToken) && !slices.Contains(o.GrantTypes, GrantAuthorizationCode) {
		e.add(key+".grant_types", "refresh_token needs authorization_code (client_credentials tokens are not refreshed)")
	}
}

// validClientID reports whether id is a usable pre-registered client ID: never a URL (those
// are client ID metadata documents) nor anything a log or page could misread.
func validClientID(id string) bool {
	if len(id) == 0 || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '~' || c == '-') {
			return false
		}
	}
	return true
}

// OAuthClientByID returns the pre-registered client whose client_id is id.
func (c *Config) OAuthClientByID(id string) (*OAuthClient, bool) {
	for i := range c.MCPClients {
		if c.MCPClients[i].ClientID == id {
			return &c.MCPClients[i], true
		}
	}
	return nil, false
}
