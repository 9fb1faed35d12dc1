// Package pluginconf is the filter's plugin configuration: the JSON subset of the gateway
// configuration that the filter receives (Istio WasmPlugin pluginConfig, Envoy
// PluginConfig.configuration, the local gateway). shared/config generates it; the filter
// parses it with Parse. It compiles for wasip1.
package pluginconf

import (
	"errors"
	"strconv"
)

// Route kinds.
const (
	KindServer = "server" // mcp.server
	KindClient = "client" // mcp.client
	KindPlain  = "plain"  // a route without mcp: identity-aware, browser session
)

// DefaultMaxRequestBytes is the default of mcp.server.max_request_bytes (4 KiB, docs/configuration.md).
const DefaultMaxRequestBytes = 4096

// Config is the plugin configuration.
type Config struct {
	// Cluster is the proxy cluster of the token service's internal listener.
	Cluster string `json:"token_service_cluster"`
	// Authority is the :authority sent on check calls.
	Authority string `json:"token_service_authority"`
	// FilterKey authenticates the filter to the check API (base64url, derived from shared_secret).
	FilterKey string `json:"filter_key"`
	// CheckTimeoutMillis bounds each check call.
	CheckTimeoutMillis uint32 `json:"check_timeout_ms"`
	// CacheTTLSeconds bounds how long a decision bundle is cached per VM.
	CacheTTLSeconds int64 `json:"cache_ttl_s"`
	// AuthenticateServiceURL is the public URL of the sign-in host.
	AuthenticateServiceURL string `json:"authenticate_service_url"`
	// AuthorizeLogFields lists the fields of each authorization log record.
	AuthorizeLogFields []string `json:"authorize_log_fields"`
	// AuthorizeLogRedact lists the keys and paths of tool arguments redacted in records (nil:
	// the default list; empty: none).
	AuthorizeLogRedact []string `json:"authorize_log_redact"`
	// AuthorizeLogMaxParameterBytes bounds mcp-tool-parameters in records (0: the default,
	// -1: no bound).
	AuthorizeLogMaxParameterBytes int `json:"authorize_log_max_parameter_bytes,omitempty"`
	// Routes are the gateway routes, most specific first.
	Routes []Route `json:"routes"`
}

// Route is one gateway route as the filter needs it.
type Route struct {
	// ID is the normalised `from` URL; the check API's route_id.
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
	// Scheme is "https" or "http" (loopback only).
	Scheme string `json:"scheme"`
	// Host is the lower-case authority, port kept only when not the scheme's default.
	Host string `json:"host"`
	// PathPrefix is the `from` path ("/" when none); it matches on segment boundaries.
	PathPrefix string `json:"path_prefix"`
	// Kind is KindServer, KindClient or KindPlain.
	Kind string `json:"kind"`
	// MaxRequestBytes bounds the request body on server routes.
	MaxRequestBytes int64 `json:"max_request_bytes,omitempty"`
	// UpstreamOAuth2 is true when the route forwards an Internal Token upstream (upstream_oauth2
	// or upstream_discovery).
	UpstreamOAuth2 bool `json:"upstream_oauth2,omitempty"`
	// Policy is the route policy in its decoded YAML/JSON form (see shared/policy).
	Policy any `json:"policy,omitempty"`
	// NoToolListFilter turns off the filtering of tools/list responses on a server route
	// (mcp.server.filter_tool_list: false).
	NoToolListFilter bool `json:"no_tool_list_filter,omitempty"`
	// PolicyShadow is the route's shadow policy (policy_shadow): evaluated and recorded
	// beside Policy, it never changes a decision.
	PolicyShadow any `json:"policy_shadow,omitempty"`
	// ToolPins are the pinned tool definitions of a server route (mcp.server.tool_lock).
	ToolPins *ToolPins `json:"tool_pins,omitempty"`
}

// ToolPins are a route's pinned tool definitions (docs/tool-pinning.md).
type ToolPins struct {
	// Warn only logs and counts a changed or new tool; otherwise it is hidden and refused.
	Warn bool `json:"warn,omitempty"`
	// Digests are the tooldigest digests by tool name.
	Digests map[string]string `json:"digests"`
}

// Parse decodes and checks a plugin configuration. It decodes it as json.Unmarshal would
// (see decode), without linking encoding/json into the filter.
func Parse(b []byte) (*Config, error) {
	var c Config
	if err := decode(b, &c); err != nil {
		return nil, errors.New("plugin configuration: " + err.Error())
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// Validate reports the first problem of c, naming its key.
func (c *Config) Validate() error {
	if c.Cluster == "" {
		return errors.New("plugin configuration: token_service_cluster is required")
	}
	if c.Authority == "" {
		return errors.New("plugin configuration: token_service_authority is required")
	}
	if c.FilterKey == "" {
		return errors.New("plugin configuration: filter_key is required")
	}
	if c.CheckTimeoutMillis == 0 {
		return errors.New("plugin configuration: check_timeout_ms must be positive")
	}
	for i := range c.Routes {
		r := &c.Routes[i]
		key := "plugin configuration: routes[" + strconv.Itoa(i) + "]."
		switch {
		case r.ID == "":
			return errors.New(key + "id is required")
		case r.Host == "":
			return errors.New(key + "host is required")
		case r.Scheme != "https" && r.Scheme != "http":
			return errors.New(key + "scheme must be https or http")
		case len(r.PathPrefix) == 0 || r.PathPrefix[0] != '/':
			return errors.New(key + "path_prefix must start with /")
		case r.Kind != KindServer && r.Kind != KindClient && r.Kind != KindPlain:
			return errors.New(key + "kind must be server, client or plain")
		case r.MaxRequestBytes < 0:
			return errors.New(key + "max_request_bytes must not be negative")
		}
		for j := range i {
			if c.Routes[j].ID == r.ID {
				// The ID keys the filter's decision cache and the token service's answers:
				// two routes sharing one would share users' decisions and assertions.
				return errors.New(key + "id " + strconv.Quote(r.ID) + " is also routes[" + strconv.Itoa(j) + "].id; route IDs must be unique")
			}
		}
		if r.Kind == KindServer && r.MaxRequestBytes == 0 {
			r.MaxRequestBytes = DefaultMaxRequestBytes
		}
	}
	return nil
}
