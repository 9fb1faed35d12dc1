package config

import (
	"encoding/json"
	"sort"
	"strings"

	"github.com/mcpmesh/gateway/shared/pluginconf"
)

// Route lookup helpers shared by the token service and the renderer.

// RouteKind returns pluginconf.KindServer, KindClient or KindPlain for r.
func (r *Route) RouteKind() string {
	switch {
	case r.MCP != nil && r.MCP.Server != nil:
		return pluginconf.KindServer
	case r.MCP != nil && r.MCP.Client != nil:
		return pluginconf.KindClient
	}
	return pluginconf.KindPlain
}

// Normalized returns the canonical form of r.From. It is valid after Validate.
func (r *Route) Normalized() NormalizedFrom {
	n, _ := NormalizeFrom(r.From)
	return n
}

// PluginConfig returns the filter's plugin configuration, routes ordered most specific first
// (longer path prefixes before shorter ones on the same host).
func (c *Config) PluginConfig() *pluginconf.Config {
	pc := &pluginconf.Config{
		Cluster:                       c.TokenService.Cluster,
		Authority:                     c.TokenService.Authority,
		FilterKey:                     c.FilterKey(),
		CheckTimeoutMillis:            uint32(c.TokenService.CheckTimeout.D().Milliseconds()),
		CacheTTLSeconds:               int64(c.TokenService.CheckCacheTTL.D().Seconds()),
		AuthenticateServiceURL:        c.AuthenticateServiceURL,
		AuthorizeLogFields:            c.AuthorizeLogFields,
		AuthorizeLogRedact:            c.AuthorizeLogRedact,
		AuthorizeLogMaxParameterBytes: c.AuthorizeLogMaxParameterBytes,
	}
	for i := range c.Routes {
		r := &c.Routes[i]
		n := r.Normalized()
		pr := pluginconf.Route{
			ID:         n.ID,
			Name:       r.Name,
			Scheme:     n.Scheme,
			Host:       n.Host,
			PathPrefix: n.PathPrefix,
			Kind:       r.RouteKind(),
			Policy:     jsonCompatible(r.Policy),
		}
		if r.PolicyShadow != nil {
			pr.PolicyShadow = jsonCompatible(r.PolicyShadow)
		}
		if r.MCP != nil && r.MCP.Server != nil {
			pr.MaxRequestBytes = r.MCP.Server.MaxRequestBytes
			pr.UpstreamOAuth2 = r.MCP.Server.HasUpstream()
			pr.NoToolListFilter = r.MCP.Server.FilterToolList != nil && !*r.MCP.Server.FilterToolList
			if tl := r.MCP.Server.ToolLock; tl != nil {
				pr.ToolPins = &pluginconf.ToolPins{Warn: tl.Mode == ToolLockWarn, Digests: tl.digests}
			}
		}
		pc.Routes = append(pc.Routes, pr)
	}
	sort.SliceStable(pc.Routes, func(i, j int) bool {
		a, b := pc.Routes[i], pc.Routes[j]
		if a.Host != b.Host {
			return a.Host < b.Host
		}
		return len(a.PathPrefix) > len(b.PathPrefix)
	})
	return pc
}

// PluginConfigJSON is PluginConfig encoded as the filter receives it, in the canonical form
// of pluginconf.Canonical (sorted keys, compact): the local gateway, the Envoy bootstrap and
// the Istio WasmPlugin (istio/render) hand the module these same bytes.
func (c *Config) PluginConfigJSON() []byte {
	b, err := json.Marshal(c.PluginConfig())
	if err == nil {
		b, err = pluginconf.Canonical(b)
	}
	if err != nil {
		panic("config: encode plugin configuration: " + err.Error()) // unreachable: jsonCompatible values only
	}
	return b
}

// RouteByID finds the route whose normalised from URL is id.
func (c *Config) RouteByID(id string) (*Route, bool) {
	for i := range c.Routes {
		if c.Routes[i].Normalized().ID == id {
			return &c.Routes[i], true
		}
	}
	return nil, false
}

// RoutesForHost returns the routes whose from host is host (lower case, port as in
// NormalizedFrom.Host).
func (c *Config) RoutesForHost(host string) []*Route {
	host = strings.ToLower(host)
	var out []*Route
	for i := range c.Routes {
		if c.Routes[i].Normalized().Host == host {
			out = append(out, &c.Routes[i])
		}
	}
	return out
}

// jsonCompatible converts YAML-decoded values (map[string]any with any keys) to values
// encoding/json can encode.
func jsonCompatible(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = jsonCompatible(e)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			ks, _ := k.(string)
			out[ks] = jsonCompatible(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = jsonCompatible(e)
		}
		return out
	}
	return v
}
