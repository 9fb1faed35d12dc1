package config

import (
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/base64"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/mcpmesh/gateway/shared/authlog"
	"github.com/mcpmesh/gateway/shared/policy"
)

// Validate checks c (after defaults) and returns an *Error listing every problem.
func (c *Config) Validate() error {
	e := &Error{}
	checkPublicURL(e, "authenticate_service_url", c.AuthenticateServiceURL, true)
	if u, err := url.Parse(c.AuthenticateServiceURL); err == nil && strings.Trim(u.Path, "/") != "" {
		e.add("authenticate_service_url", "must be an origin without a path (the sign-in host is served at its root), got %q", c.AuthenticateServiceURL)
	}
	checkSecret(e, "shared_secret", c.SharedSecret)
	checkSecret(e, "cookie_secret", c.CookieSecret)
	c.validateRuntimeFlags(e)
	c.validateIDP(e)
	for i, d := range c.MCPAllowedClientIDDomains {
		if msg := checkDomainPattern(d); msg != "" {
			e.add("mcp_allowed_client_id_domains["+strconv.Itoa(i)+"]", "%s", msg)
		}
	}
	for i, d := range c.MCPAllowedUpstreamDomains {
		if msg := checkDomainPattern(d); msg != "" {
			e.add("mcp_allowed_upstream_domains["+strconv.Itoa(i)+"]", "%s", msg)
		}
	}
	switch c.Storage.Type {
	case "sqlite", "memory":
	case "postgres":
		if c.Storage.DSN == "" {
			e.add("storage.dsn", "is required when storage.type is postgres")
		}
	default:
		e.add("storage.type", "must be sqlite, postgres or memory, got %q", c.Storage.Type)
	}
	for _, k := range []struct{ key, addr string }{
		{"token_service.address", c.TokenService.Address},
		{"token_service.internal_address", c.TokenService.InternalAddress},
	} {
		if _, _, err := net.SplitHostPort(k.addr); err != nil {
			e.add(k.key, "want host:port, got %q", k.addr)
		}
	}
	if c.TokenService.Address == c.TokenService.InternalAddress {
		e.add("token_service.internal_address", "must differ from token_service.address: the check API must not be public")
	}
	if n := c.TokenService.TrustedProxyHops; n < 0 || n > MaxTrustedProxyHops {
		e.add("token_service.trusted_proxy_hops", "must be between 0 and %d (the number of proxies that append to X-Forwarded-For), got %d", MaxTrustedProxyHops, n)
	}
	c.validateReuseInterval(e)
	if c.TokenService.CheckCacheTTL.D() > c.TokenService.AccessTokenLifetime.D() {
		e.add("token_service.check_cache_ttl", "must not exceed token_service.access_token_lifetime")
	}
	if len(c.AuthorizeLogFields) > 0 {
		if _, err := authlog.ParseFields(c.AuthorizeLogFields); err != nil {
			e.add("authorize_log_fields", "%v", err)
		}
	}
	if err := authlog.ParseRedact(c.AuthorizeLogRedact); err != nil {
		e.add("authorize_log_redact", "%v", err)
	}
	if n := c.AuthorizeLogMaxParameterBytes; n < -1 || n > MaxAuthorizeLogParameterBytes {
		e.add("authorize_log_max_parameter_bytes", "must be -1 (no bound), 0 (the default, %d) or at most %d, got %d", authlog.DefaultMaxParameterBytes, MaxAuthorizeLogParameterBytes, n)
	}
	c.validateCertificate(e)
	c.validateToolLocks(e)
	c.validateOAuthClients(e)
	seen := map[string]int{}
	for i := range c.Routes {
		c.validateRoute(e, i, seen)
		c.resolveUpstreamSecretFile(e, i)
		if _, err := policy.Parse(c.Routes[i].Policy); err != nil {
			e.add("routes["+strconv.Itoa(i)+"]", "%v", err)
		}
		if c.Routes[i].PolicyShadow != nil {
			if _, err := policy.ParseKey("policy_shadow", c.Routes[i].PolicyShadow); err != nil {
				e.add("routes["+strconv.Itoa(i)+"]", "%v", err)
			}
		}
	}
	c.validatePublicUpstreamClients(e)
	return e.err()
}

func (c *Config) validateIDP(e *Error) {
	if c.IDPProvider == "" {
		e.add("idp_provider", "is required: set it to one of %s (the hosted authenticate service is not available in this gateway)", strings.Join(ProviderNames(), ", "))
		return
	}
	provider, ok := LookupProvider(c.IDPProvider)
	if !ok {
		e.add("idp_provider", "must be one of %s, got %q%s", strings.Join(ProviderNames(), ", "), c.IDPProvider, suggestion(c.IDPProvider, ProviderNames()))
		return
	}
	if provider.Unavailable != "" {
		e.add("idp_provider", "%s", provider.Unavailable)
		return
	}
	if c.IDPClientID == "" {
		e.add("idp_client_id", "is required")
	}
	switch {
	case c.IDPClientSecret != "" && c.IDPClientSecretFile != "":
		e.add("idp_client_secret_file", "set either idp_client_secret or idp_client_secret_file, not both")
	case c.IDPClientSecretFile != "":
		b, err := os.ReadFile(c.IDPClientSecretFile)
		if err != nil {
			e.add("idp_client_secret_file", "cannot read: %v", err)
		} else if s := strings.TrimRight(string(b), "\r\n"); s == "" {
			e.add("idp_client_secret_file", "file is empty")
		} else {
			c.IDPClientSecretResolved = s
		}
	case c.IDPClientSecret != "":
		c.IDPClientSecretResolved = c.IDPClientSecret
	default:
		e.add("idp_client_secret", "is required unless idp_client_secret_file is set")
	}
	switch {
	case c.IDPProviderURL != "":
		if strings.HasSuffix(strings.TrimSuffix(c.IDPProviderURL, "/"), "/.well-known/openid-configuration") {
			e.add("idp_provider_url", "give the base URL, without /.well-known/openid-configuration")
		}
		checkPublicURL(e, "idp_provider_url", c.IDPProviderURL, false)
	case provider.Issuer == "":
		e.add("idp_provider_url", "is required for idp_provider %q: the issuer of your %s, such as %s%s", c.IDPProvider, c.IDPProvider, provider.IssuerExample, noDefaultIssuer(provider))
	}
	if c.IDPProviderURL != "" && provider.Protocol == ProtocolGitHub {
		if u, err := url.Parse(c.IDPProviderURL); err == nil && strings.Trim(u.Path, "/") != "" {
			e.add("idp_provider_url", "for github give the origin of GitHub Enterprise Server (such as https://github.example.com), without a path")
		}
	}
	for i, s := range c.IDPScopes {
		if s == "" || strings.ContainsAny(s, " \t\"\\") {
			e.add("idp_scopes["+strconv.Itoa(i)+"]", "invalid scope %q", s)
		}
	}
}

// noDefaultIssuer explains why a provider has no default issuer.
func noDefaultIssuer(p Provider) string {
	if p.IssuerTemplate {
		return " (there is no default tenant: common or organizations would admit accounts of any tenant)"
	}
	return ""
}

func (c *Config) validateRoute(e *Error, i int, seen map[string]int) {
	r := &c.Routes[i]
	key := "routes[" + strconv.Itoa(i) + "]"
	if r.From == "" {
		e.add(key+".from", "is required")
	} else if n, msg := NormalizeFrom(r.From); msg != "" {
		e.add(key+".from", "%s", msg)
	} else if j, dup := seen[n.ID]; dup {
		e.add(key+".from", "duplicates routes[%d].from (%s)", j, n.ID)
	} else {
		seen[n.ID] = i
	}
	if r.To == "" {
		e.add(key+".to", "is required")
	} else if u, err := url.Parse(r.To); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		e.add(key+".to", "want an http or https URL, got %q", r.To)
	} else if u.User != nil {
		e.add(key+".to", "must not contain credentials")
	}
	if r.MCP == nil {
		return
	}
	if !c.MCPEnabled() {
		e.add(key+".mcp", "requires runtime_flags.mcp: true")
	}
	switch {
	case r.MCP.Server != nil && r.MCP.Client != nil:
		e.add(key+".mcp", "set either server or client, not both")
	case r.MCP.Server == nil && r.MCP.Client == nil:
		e.add(key+".mcp", "set server: {} or client: {}")
	case r.MCP.Server != nil:
		s := r.MCP.Server
		if s.MaxRequestBytes < 0 {
			e.add(key+".mcp.server.max_request_bytes", "must be positive")
		}
		if u := s.UpstreamOAuth2; u != nil {
			validateUpstreamOAuth2(e, key+".mcp.server.upstream_oauth2", u)
		}
		if s.UpstreamDiscovery != nil {
			c.validateUpstreamDiscovery(e, i)
		}
	}
}

// NormalizedFrom is a route's `from` URL in canonical form.
type NormalizedFrom struct {
	// ID is scheme://host[:port]/path, the route's identity (check API, Internal Tokens).
	ID     string
	Scheme string
	// Host is lower case, with the port only when it is not the scheme's default.
	Host string
	// PathPrefix is "/" or a path without a trailing slash.
	PathPrefix string
}

// NormalizeFrom parses a route `from` URL. It returns a problem message when it is unusable.
func NormalizeFrom(raw string) (NormalizedFrom, string) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return NormalizedFrom{}, "want an absolute URL such as https://mcp.example.com/mcp, got " + strconv.Quote(raw)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return NormalizedFrom{}, "must not contain credentials, a query or a fragment"
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if strings.ContainsAny(host, "*?[]") {
		return NormalizedFrom{}, "wildcard hosts are not supported: name each host (a wildcard route would let other hosts past the filter)"
	}
	port := u.Port()
	if p, err := strconv.Atoi(port); port != "" && (err != nil || p <= 0 || p > 65535 || strconv.Itoa(p) != port) {
		return NormalizedFrom{}, "invalid port " + strconv.Quote(port)
	}
	switch u.Scheme {
	case "https":
		if port == "443" {
			port = ""
		}
	case "http":
		if !IsLoopbackHost(host) {
			return NormalizedFrom{}, "plain http is accepted only for loopback hosts; use https"
		}
		if port == "80" {
			port = ""
		}
	default:
		return NormalizedFrom{}, "scheme must be https (or http on loopback)"
	}
	if strings.Contains(u.Path, "..") || strings.Contains(u.Path, "//") || strings.ContainsAny(u.EscapedPath(), "%") {
		return NormalizedFrom{}, "path must be a plain path without .., // or escapes"
	}
	if port != "" {
		host = net.JoinHostPort(host, port)
	} else if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	prefix := strings.TrimSuffix(u.Path, "/")
	if prefix == "" {
		prefix = "/"
	}
	id := u.Scheme + "://" + host
	if prefix != "/" {
		id += prefix
	}
	return NormalizedFrom{ID: id, Scheme: u.Scheme, Host: host, PathPrefix: prefix}, ""
}

// IsLoopbackHost reports whether host (without port) names the loopback interface.
func IsLoopbackHost(host string) bool {
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func checkPublicURL(e *Error, key, raw string, required bool) {
	if raw == "" {
		if required {
			e.add(key, "is required")
		}
		return
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		e.add(key, "want an absolute URL, got %q", raw)
		return
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && IsLoopbackHost(u.Hostname()):
	case u.Scheme == "http":
		e.add(key, "plain http is accepted only for loopback hosts; use https")
	default:
		e.add(key, "scheme must be https, got %q", u.Scheme)
	}
	if u.User != nil || u.Fragment != "" {
		e.add(key, "must not contain credentials or a fragment")
	}
}

func checkSecret(e *Error, key, v string) {
	if v == "" {
		e.add(key, "is required (base64 of 32 random bytes, e.g. `head -c32 /dev/urandom | base64`)")
		return
	}
	b, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		b, err = base64.RawStdEncoding.DecodeString(v)
	}
	if err != nil || len(b) != 32 {
		e.add(key, "want base64 of exactly 32 bytes")
	}
}

// checkDomainPattern validates an mcp_allowed_client_id_domains entry.
func checkDomainPattern(p string) string {
	d := strings.TrimPrefix(p, "*.")
	if p != strings.ToLower(p) {
		return "write domain patterns in lower case, got " + strconv.Quote(p)
	}
	if d == "" || strings.ContainsAny(d, "*/:@ ") || strings.HasPrefix(d, ".") || strings.HasSuffix(d, ".") || !strings.Contains(d, ".") && d != "localhost" {
		return "want a domain such as example.com or *.example.com, got " + strconv.Quote(p)
	}
	return ""
}

// secretBytes decodes a validated base64 secret.
func secretBytes(v string) []byte {
	b, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		b, _ = base64.RawStdEncoding.DecodeString(v)
	}
	return b
}

// DeriveKey derives a 32-byte key for purpose from shared_secret (HKDF-SHA256).
func (c *Config) DeriveKey(purpose string) []byte {
	k, err := hkdf.Key(sha256.New, secretBytes(c.SharedSecret), nil, "mcp-gateway/"+purpose, 32)
	if err != nil {
		panic("config: hkdf: " + err.Error()) // unreachable: length 32 is always valid
	}
	return k
}

// CookieKey returns the decoded cookie_secret.
func (c *Config) CookieKey() []byte { return secretBytes(c.CookieSecret) }

// FilterKey is the key the filter presents to the check API (base64url, no padding).
func (c *Config) FilterKey() string {
	return base64.RawURLEncoding.EncodeToString(c.DeriveKey("check-api/filter-key"))
}
