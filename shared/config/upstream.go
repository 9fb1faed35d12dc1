package config

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/mcpmesh/gateway/shared/domains"
)

// validateUpstreamOAuth2 checks one route's upstream_oauth2 block at key path k (its
// client_secret_file is read by resolveUpstreamSecretFile).
func validateUpstreamOAuth2(e *Error, k string, u *UpstreamOAuth2) {
	if u.ClientID == "" {
		e.add(k+".client_id", "is required")
	}
	for _, f := range []struct{ key, v string }{
		{"auth_url", u.Endpoint.AuthURL},
		{"token_url", u.Endpoint.TokenURL},
	} {
		if f.v == "" {
			e.add(k+".endpoint."+f.key, "is required")
			continue
		}
		checkPublicURL(e, k+".endpoint."+f.key, f.v, true)
	}
	if a := u.Endpoint.AuthStyle; a != "" && a != "header" && a != "params" {
		e.add(k+".endpoint.auth_style", "must be header or params, got %q", a)
	}
	for i, sc := range u.Scopes {
		if sc == "" || strings.ContainsAny(sc, "\"\\") || !printableASCII(sc) {
			e.add(k+".scopes["+strconv.Itoa(i)+"]", "invalid scope %q", sc)
		}
	}
	if u.Issuer != "" {
		checkPublicURL(e, k+".issuer", u.Issuer, true)
	}
}

// validateUpstreamDiscovery checks one route's upstream_discovery block at key path k (its
// client_secret_file is read by resolveUpstreamSecretFile): the upstream (to) is probed, so
// its host must be on mcp_allowed_upstream_domains.
func (c *Config) validateUpstreamDiscovery(e *Error, i int) {
	r := &c.Routes[i]
	k := "routes[" + strconv.Itoa(i) + "].mcp.server"
	s := r.MCP.Server
	if s.UpstreamOAuth2 != nil {
		e.add(k+".upstream_discovery", "set either upstream_oauth2 (the provider's endpoints, written by hand) or upstream_discovery (discovered from the upstream), not both")
	}
	d := s.UpstreamDiscovery
	k += ".upstream_discovery"
	if d.ClientID == "" && (d.ClientSecret != "" || d.ClientSecretFile != "") {
		e.add(k+".client_id", "is required with a client secret (a pre-registered client)")
	}
	if d.Issuer != "" {
		checkPublicURL(e, k+".issuer", d.Issuer, true)
		if u, err := url.Parse(d.Issuer); err == nil && u.Host != "" && len(c.MCPAllowedUpstreamDomains) > 0 &&
			!domains.DomainAllowed(c.MCPAllowedUpstreamDomains, u.Hostname()) && !domains.LoopbackLiteralListed(c.MCPAllowedUpstreamDomains, u.Hostname()) {
			e.add(k+".issuer", "host %q must match mcp_allowed_upstream_domains: discovery fetches the authorization server's metadata from it", u.Hostname())
		}
	}
	for j, sc := range d.Scopes {
		if sc == "" || strings.ContainsAny(sc, "\"\\") || !printableASCII(sc) {
			e.add(k+".scopes["+strconv.Itoa(j)+"]", "invalid scope %q", sc)
		}
	}
	if len(c.MCPAllowedUpstreamDomains) == 0 {
		e.add("mcp_allowed_upstream_domains", "is required when a route has upstream_discovery (routes[%d]): name the domains of the upstream and its authorization server, such as [mcp.vendor.example, \"*.vendor.example\"]", i)
		return
	}
	if u, err := url.Parse(r.To); err == nil && u.Host != "" && !domains.DomainAllowed(c.MCPAllowedUpstreamDomains, u.Hostname()) &&
		!domains.LoopbackLiteralListed(c.MCPAllowedUpstreamDomains, u.Hostname()) {
		e.add("routes["+strconv.Itoa(i)+"].to", "host %q must match mcp_allowed_upstream_domains: the upstream of an upstream_discovery route is probed for its metadata", u.Hostname())
	}
}

// validatePublicUpstreamClients refuses a public upstream client (no client secret) on a host
// with another upstream route (upstream_oauth2 or upstream_discovery): every upstream route of
// a host shares one callback URL, and without a client secret nothing stops one route's
// provider (for upstream_discovery, one the upstream chose) from redeeming a code meant for
// another route's provider.
func (c *Config) validatePublicUpstreamClients(e *Error) {
	byHost := map[string][]int{}
	for i := range c.Routes {
		r := &c.Routes[i]
		if r.MCP == nil || !r.MCP.Server.HasUpstream() {
			continue
		}
		n, msg := NormalizeFrom(r.From)
		if msg != "" {
			continue
		}
		byHost[n.Scheme+"://"+n.Host] = append(byHost[n.Scheme+"://"+n.Host], i)
	}
	for _, idx := range byHost {
		if len(idx) < 2 {
			continue
		}
		for _, i := range idx {
			k := "routes[" + strconv.Itoa(i) + "].mcp.server."
			switch s := c.Routes[i].MCP.Server; {
			case s.UpstreamOAuth2 != nil && s.UpstreamOAuth2.ClientSecret == "" && s.UpstreamOAuth2.ClientSecretFile == "":
				k += "upstream_oauth2.client_secret"
			case s.UpstreamDiscovery != nil && s.UpstreamDiscovery.ClientID != "" &&
				s.UpstreamDiscovery.ClientSecret == "" && s.UpstreamDiscovery.ClientSecretFile == "":
				k += "upstream_discovery.client_secret"
			default:
				continue
			}
			e.add(k, "is required: a public upstream client (no client secret) must be the only upstream route of its host")
		}
	}
}

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
