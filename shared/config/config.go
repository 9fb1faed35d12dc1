package config

import (
	"time"
)

// Config is the whole gateway configuration.
type Config struct {
	// RuntimeFlags holds feature flags; "mcp" must be true for any mcp route.
	RuntimeFlags map[string]bool `yaml:"runtime_flags"`
	// dir is the directory of the configuration file, "" when parsed from bytes (Path).
	dir string

	// AuthenticateServiceURL is the public URL of the sign-in host.
	AuthenticateServiceURL string `yaml:"authenticate_service_url"`
	// SharedSecret (base64, 32 bytes) seals stored secrets and keys the filter's check calls.
	SharedSecret string `yaml:"shared_secret"`
	// CookieSecret (base64, 32 bytes) keys browser cookies and CSRF tokens.
	CookieSecret string `yaml:"cookie_secret"`
	// CookieExpiration is the browser session lifetime (default 14h).
	CookieExpiration Duration `yaml:"cookie_expiration"`

	// Identity provider settings (docs/configuration.md, "Identity provider").
	IDPProvider         string            `yaml:"idp_provider"`
	IDPProviderURL      string            `yaml:"idp_provider_url"`
	IDPClientID         string            `yaml:"idp_client_id"`
	IDPClientSecret     string            `yaml:"idp_client_secret"`
	IDPClientSecretFile string            `yaml:"idp_client_secret_file"`
	IDPScopes           StringList        `yaml:"idp_scopes"`
	IDPRequestParams    map[string]string `yaml:"idp_request_params"`

	// MCPAllowedClientIDDomains are the domain patterns allowed for URL client IDs.
	MCPAllowedClientIDDomains []string `yaml:"mcp_allowed_client_id_domains"`
	// MCPAllowedUpstreamDomains are the domain patterns (same "*." semantics) of every URL
	// the token service learns from an upstream_discovery route's upstream and fetches
	// (docs/upstream-discovery.md).
	MCPAllowedUpstreamDomains []string `yaml:"mcp_allowed_upstream_domains"`
	// MCPClients are the OAuth clients the operator registers (mcpclients.go).
	MCPClients []OAuthClient `yaml:"mcp_clients"`
	// AuthorizeLogFields lists the fields of each authorization log record.
	AuthorizeLogFields []string `yaml:"authorize_log_fields"`
	// AuthorizeLogRedact lists the keys (any depth, case-insensitive) and paths ("$.a.b") of
	// tool arguments written as "[redacted]" in records; nil means authlog.DefaultRedact,
	// an empty list redacts nothing.
	AuthorizeLogRedact []string `yaml:"authorize_log_redact"`
	// AuthorizeLogMaxParameterBytes bounds mcp-tool-parameters in records: 0 means
	// authlog.DefaultMaxParameterBytes, -1 no bound.
	AuthorizeLogMaxParameterBytes int `yaml:"authorize_log_max_parameter_bytes"`

	// Storage selects the token service's store.
	Storage Storage `yaml:"storage"`
	// TokenService holds deployment settings of the token service and the filter's callout.
	TokenService TokenService `yaml:"token_service"`
	// Routes are the protected routes.
	Routes []Route `yaml:"routes"`

	// CertificateFile and CertificateKeyFile are the PEM certificate (chain) and private key
	// the local gateway serves its https hosts with (docs/clients.md#tls); both or neither.
	// Envoy and Istio take their certificates from their own configuration.
	CertificateFile    string `yaml:"certificate_file"`
	CertificateKeyFile string `yaml:"certificate_key_file"`

	// IDPClientSecretResolved is idp_client_secret or the content of idp_client_secret_file.
	IDPClientSecretResolved string `yaml:"-"`
	// Notes are what Load changed that the operator should read in the log (a relative
	// storage.path resolved against the configuration file's folder).
	Notes []string `yaml:"-"`
	// storagePathDefaulted says storage.path was not written: the default stays in the
	// working directory.
	storagePathDefaulted bool
}

// Storage selects a store backend.
type Storage struct {
	// Type is sqlite (default), postgres or memory.
	Type string `yaml:"type"`
	// Path is the SQLite database file (default gateway.db).
	Path string `yaml:"path"`
	// DSN is the PostgreSQL connection string.
	DSN string `yaml:"dsn"`
}

// TokenService holds the token service's listeners, token lifetimes and the filter's callout
// settings. Every field has a default.
type TokenService struct {
	// Address is the public listener (gateway paths, routed there by the proxy).
	Address string `yaml:"address"`
	// InternalAddress is the internal listener of the check API.
	InternalAddress string `yaml:"internal_address"`
	// Cluster is the proxy cluster name the filter's check calls go to.
	Cluster string `yaml:"cluster"`
	// Authority is the :authority of check calls.
	Authority string `yaml:"authority"`
	// CheckTimeout bounds each check call (default 2s).
	CheckTimeout Duration `yaml:"check_timeout"`
	// CheckCacheTTL bounds how long the filter caches a decision bundle (default 30s).
	CheckCacheTTL Duration `yaml:"check_cache_ttl"`
	// AccessTokenLifetime is the External Token lifetime (default 1h).
	AccessTokenLifetime Duration `yaml:"access_token_lifetime"`
	// RefreshTokenLifetime is the MCP refresh token lifetime (default 720h).
	RefreshTokenLifetime Duration `yaml:"refresh_token_lifetime"`
	// TrustedProxyHops is how many proxies in front of the public listener append
	// the address they received a request from to X-Forwarded-For (default 0:
	// the header is not trusted). The token service counts per-caller limits
	// against the address the outermost of them saw.
	TrustedProxyHops int `yaml:"trusted_proxy_hops"`
	// RefreshTokenReuseInterval is how long after a refresh token is rotated the same
	// client may present it again and receive the same successor (default 5s; 0s turns
	// it off; at most 1m). Nil: not set. Read it with [TokenService.ReuseInterval].
	RefreshTokenReuseInterval *Duration `yaml:"refresh_token_reuse_interval"`
}

// Route is one protected route.
type Route struct {
	// Name is the display name (route listing).
	Name string `yaml:"name"`
	// From is the public URL: scheme, host, optional port and path prefix.
	From string `yaml:"from"`
	// To is the upstream URL.
	To string `yaml:"to"`
	// Policy is the route policy in decoded form (see shared/policy).
	Policy any `yaml:"policy"`
	// PolicyShadow is a second policy evaluated beside Policy on every request, recorded
	// and counted, that never changes a decision (docs/policy.md, "Shadow policies").
	PolicyShadow any `yaml:"policy_shadow"`
	// MCP marks the route as an MCP server or an MCP client route.
	MCP *MCP `yaml:"mcp"`
}

// MCP is the route-level mcp object: exactly one of Server and Client.
type MCP struct {
	Server *MCPServer `yaml:"server"`
	Client *MCPClient `yaml:"client"`
}

// MCPServer marks a route as hosting an MCP server.
type MCPServer struct {
	UpstreamOAuth2 *UpstreamOAuth2 `yaml:"upstream_oauth2"`
	// UpstreamDiscovery marks a route whose upstream protects itself with the MCP
	// authorization specification: its authorization server is discovered, the gateway
	// registers with it, and the TI is obtained as with upstream_oauth2
	// (docs/upstream-discovery.md). Not together with UpstreamOAuth2.
	UpstreamDiscovery *UpstreamDiscovery `yaml:"upstream_discovery"`
	// MaxRequestBytes bounds the request body (default 4096).
	MaxRequestBytes int64 `yaml:"max_request_bytes"`
	// FilterToolList, when false, passes tools/list responses unfiltered (default true:
	// docs/tool-lists.md).
	FilterToolList *bool `yaml:"filter_tool_list"`
	// ToolLock pins the server's tool definitions to a lock file (docs/tool-pinning.md).
	ToolLock *ToolLock `yaml:"tool_lock"`
}

// ToolLock is mcp.server.tool_lock.
type ToolLock struct {
	// File is the lock file written by the toollock command (relative to the working
	// directory, as other file keys).
	File string `yaml:"file"`
	// Mode is enforce (default: changed and new tools are hidden and refused) or warn (they
	// are logged and counted only).
	Mode string `yaml:"mode"`
	// digests are the file's digests by tool name, read by Validate.
	digests map[string]string
}

// MCPClient marks a route as an MCP client route; it has no fields.
type MCPClient struct{}

// UpstreamOAuth2 configures the upstream OAuth flow of an MCP server route.
type UpstreamOAuth2 struct {
	ClientID string `yaml:"client_id"`
	// ClientSecret is optional: without it (and without ClientSecretFile) the gateway is a
	// public client at the upstream provider and relies on PKCE.
	ClientSecret string         `yaml:"client_secret"`
	Endpoint     OAuth2Endpoint `yaml:"endpoint"`
	Scopes       []string       `yaml:"scopes"`

	// ClientSecretFile names a file holding the client secret (a mounted Kubernetes Secret);
	// after Validate its content is in ClientSecret.
	ClientSecretFile string `yaml:"client_secret_file"`
	// Issuer is the provider's issuer identifier; when set, the `iss` of the authorization
	// response (RFC 9207) must equal it.
	Issuer string `yaml:"issuer"`
}

// UpstreamDiscovery is mcp.server.upstream_discovery: every field is optional.
type UpstreamDiscovery struct {
	// ClientID is a client the operator registered at the discovered authorization server
	// (the first registration choice of the MCP specification); empty: a client ID metadata
	// document or dynamic registration.
	ClientID string `yaml:"client_id"`
	// ClientSecret of ClientID; empty: a public client relying on PKCE.
	ClientSecret string `yaml:"client_secret"`
	// ClientSecretFile names a file holding ClientSecret; after Validate its content is in
	// ClientSecret.
	ClientSecretFile string `yaml:"client_secret_file"`
	// Scopes replace the scopes the upstream asks for (its challenge, then its
	// scopes_supported).
	Scopes []string `yaml:"scopes"`
	// Issuer pins the authorization server: when set, discovery must find exactly this
	// issuer, else the route fails (docs/upstream-discovery.md). Recommended with a
	// pre-registered client, whose secret then goes to no other server.
	Issuer string `yaml:"issuer"`
}

// HasUpstream reports whether the route sends an Internal Token upstream: it has
// upstream_oauth2 or upstream_discovery.
func (s *MCPServer) HasUpstream() bool {
	return s != nil && (s.UpstreamOAuth2 != nil || s.UpstreamDiscovery != nil)
}

// OAuth2Endpoint is an upstream provider's endpoints.
type OAuth2Endpoint struct {
	AuthURL  string `yaml:"auth_url"`
	TokenURL string `yaml:"token_url"`
	// AuthStyle is header or params; empty means try both, as x/oauth2 does.
	AuthStyle string `yaml:"auth_style"`
}

// MCPEnabled reports whether runtime_flags.mcp is set.
func (c *Config) MCPEnabled() bool { return c.RuntimeFlags["mcp"] }

// Defaults of the settings that have one.
const (
	DefaultCookieExpiration     = 14 * time.Hour
	DefaultAddress              = "127.0.0.1:8480"
	DefaultInternalAddress      = "127.0.0.1:8481"
	DefaultCluster              = "gateway-tokensvc"
	DefaultAuthority            = "gateway-tokensvc"
	DefaultCheckTimeout         = 2 * time.Second
	DefaultCheckCacheTTL        = 30 * time.Second
	DefaultAccessTokenLifetime  = time.Hour
	DefaultRefreshTokenLifetime = 30 * 24 * time.Hour
	DefaultSQLitePath           = "gateway.db"
)

// MaxTrustedProxyHops bounds token_service.trusted_proxy_hops.
const MaxTrustedProxyHops = 10

// MaxAuthorizeLogParameterBytes bounds authorize_log_max_parameter_bytes (1 MiB).
const MaxAuthorizeLogParameterBytes = 1 << 20

// DefaultIDPScopes are the scopes requested when idp_scopes is not set (docs/configuration.md).
var defaultIDPScopes = []string{"openid", "profile", "email", "offline_access"}

// EffectiveIDPScopes returns idp_scopes, or the defaults for the provider (without
// offline_access where the provider table says so).
func (c *Config) EffectiveIDPScopes() []string {
	if len(c.IDPScopes) > 0 {
		return append([]string(nil), c.IDPScopes...)
	}
	p, _ := LookupProvider(c.IDPProvider)
	if p.DefaultScopes != nil {
		return append([]string(nil), p.DefaultScopes...)
	}
	out := make([]string, 0, len(defaultIDPScopes))
	for _, s := range defaultIDPScopes {
		if p.NoOfflineAccess && s == "offline_access" {
			continue
		}
		out = append(out, s)
	}
	return out
}

// EffectiveIDPRequestParams returns the sign-in request parameters: the provider's defaults
// (the provider table), replaced by idp_request_params when set (an empty map removes them),
// or merged with them where the table says so (apple).
func (c *Config) EffectiveIDPRequestParams() map[string]string {
	p, _ := LookupProvider(c.IDPProvider)
	out := map[string]string{}
	if c.IDPRequestParams == nil || p.MergeRequestParams {
		for k, v := range p.RequestParams {
			out[k] = v
		}
	}
	for k, v := range c.IDPRequestParams {
		out[k] = v
	}
	return out
}
