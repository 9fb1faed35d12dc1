package render

import (
	"net"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/shared/paths"
)

// EnvoyOptions adjust the plain Envoy bootstrap.
type EnvoyOptions struct {
	// ModulePath is where Envoy reads filter.wasm (default /etc/envoy/filter.wasm).
	ModulePath string
	// TLSDir holds tls.crt and tls.key for the https listeners (default /etc/envoy/tls).
	TLSDir string
	// AdminPort is the admin listener's port on 127.0.0.1 (default 9901).
	AdminPort int
}

// Names in the Envoy bootstrap.
const (
	envoyPublicCluster = "mcp-gateway-tokensvc-public"
	envoyFilterName    = "mcp-gateway"
)

// RenderEnvoy renders a plain Envoy bootstrap: one listener per port of the route hosts and
// the authenticate host (TLS where the scheme is https), envoy.filters.http.wasm running
// filter.wasm with the plugin configuration the local gateway gives it, the token service's
// internal cluster (token_service.cluster, the check calls) and public cluster (gateway paths
// and the authenticate host), and a cluster per upstream.
func RenderEnvoy(cfg *config.Config, o EnvoyOptions) ([]byte, error) {
	if o.ModulePath == "" {
		o.ModulePath = "/etc/envoy/filter.wasm"
	}
	if o.TLSDir == "" {
		o.TLSDir = "/etc/envoy/tls"
	}
	if o.AdminPort == 0 {
		o.AdminPort = 9901
	}
	r := &renderer{cfg: cfg, pc: cfg.PluginConfig()}
	tsHost, pubPort, inPort, err := envoyTokenService(cfg)
	if err != nil {
		return nil, err
	}
	routeHosts, authHost := r.hosts()
	type listener struct {
		port  int
		https bool
		hosts []string
	}
	byPort := map[int]*listener{}
	scheme := map[string]bool{} // host -> https
	for _, rt := range r.pc.Routes {
		scheme[rt.Host] = rt.Scheme == "https"
	}
	if authHost != "" {
		if _, ok := scheme[authHost]; !ok {
			scheme[authHost] = strings.HasPrefix(cfg.AuthenticateServiceURL, "https:")
		}
	}
	hosts := append([]string(nil), routeHosts...)
	if authHost != "" && !contains(routeHosts, authHost) {
		hosts = append(hosts, authHost)
	}
	sort.Strings(hosts)
	for _, h := range hosts {
		_, port := hostName(h)
		if port == 0 {
			port = 80
			if scheme[h] {
				port = 443
			}
		}
		l := byPort[port]
		if l == nil {
			l = &listener{port: port, https: scheme[h]}
			byPort[port] = l
		}
		if l.https != scheme[h] {
			return nil, &Error{Key: "routes", Msg: "port " + strconv.Itoa(port) + " serves both http and https hosts; Envoy needs one scheme per listener"}
		}
		l.hosts = append(l.hosts, h)
	}
	ports := make([]int, 0, len(byPort))
	for p := range byPort {
		ports = append(ports, p)
	}
	sort.Ints(ports)

	clusters := []any{
		envoyCluster(cfg.TokenService.Cluster, tsHost, inPort, false),
		envoyCluster(envoyPublicCluster, tsHost, pubPort, false),
	}
	seenCluster := map[string]bool{}
	var listeners []any
	for _, port := range ports {
		l := byPort[port]
		var vhosts []any
		for _, h := range l.hosts {
			name, _ := hostName(h)
			domains := []any{name, name + ":" + strconv.Itoa(port)}
			var routes []any
			if h == authHost && !contains(routeHosts, h) {
				routes = append(routes, obj{"match": obj{"prefix": "/"}, "route": obj{"cluster": envoyPublicCluster}})
			} else {
				for _, m := range paths.GatewayMatches() {
					k := "path"
					if m.Prefix {
						k = "prefix"
					}
					routes = append(routes, obj{"match": obj{k: m.Path}, "route": obj{"cluster": envoyPublicCluster}})
				}
				rs, us, idx := r.routesOf(h)
				for k, rt := range rs {
					cn := "upstream-" + us[k].Host + "-" + strconv.Itoa(us[k].Port)
					if !seenCluster[cn] {
						seenCluster[cn] = true
						clusters = append(clusters, envoyCluster(cn, us[k].Host, us[k].Port, us[k].TLS))
					}
					ra := obj{"cluster": cn, "host_rewrite_literal": us[k].Host, "timeout": "0s"}
					match := obj{"prefix": "/"}
					if rt.PathPrefix != "/" {
						match = obj{"path_separated_prefix": rt.PathPrefix}
					}
					switch {
					case rt.PathPrefix == "/" && us[k].Path != "":
						ra["prefix_rewrite"] = us[k].Path + "/"
					case rt.PathPrefix != "/" && us[k].Path == "":
						ra["regex_rewrite"] = obj{"pattern": obj{"regex": "^" + regexp.QuoteMeta(rt.PathPrefix) + "/?"}, "substitution": "/"}
					case rt.PathPrefix != "/" && us[k].Path != rt.PathPrefix:
						ra["prefix_rewrite"] = us[k].Path
					}
					routes = append(routes, obj{"name": "route-" + strconv.Itoa(idx[k]), "match": match, "route": ra})
				}
			}
			vhosts = append(vhosts, obj{"name": h, "domains": domains, "routes": routes})
		}
		vhosts = append(vhosts, obj{"name": "unknown-host", "domains": []any{"*"}, "routes": []any{obj{"match": obj{"prefix": "/"}, "direct_response": obj{"status": 404}}}})
		hcm := obj{
			"@type":                            "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
			"stat_prefix":                      "mcp_gateway_" + strconv.Itoa(port),
			"use_remote_address":               true,
			"normalize_path":                   true,
			"merge_slashes":                    true,
			"path_with_escaped_slashes_action": "REJECT_REQUEST",
			"route_config":                     obj{"name": "mcp-gateway-" + strconv.Itoa(port), "virtual_hosts": vhosts},
			"http_filters": []any{
				obj{"name": "envoy.filters.http.wasm", "typed_config": obj{
					"@type": "type.googleapis.com/envoy.extensions.filters.http.wasm.v3.Wasm",
					"config": obj{
						"name":           envoyFilterName,
						"root_id":        envoyFilterName,
						"failure_policy": "FAIL_CLOSED",
						"configuration":  obj{"@type": "type.googleapis.com/google.protobuf.StringValue", "value": string(cfg.PluginConfigJSON())},
						"vm_config": obj{
							"vm_id":   envoyFilterName,
							"runtime": "envoy.wasm.runtime.v8",
							"code":    obj{"local": obj{"filename": o.ModulePath}},
						},
					},
				}},
				obj{"name": "envoy.filters.http.router", "typed_config": obj{"@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"}},
			},
		}
		fc := obj{"filters": []any{obj{"name": "envoy.filters.network.http_connection_manager", "typed_config": hcm}}}
		if l.https {
			fc["transport_socket"] = obj{"name": "envoy.transport_sockets.tls", "typed_config": obj{
				"@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext",
				"common_tls_context": obj{"tls_certificates": []any{obj{
					"certificate_chain": obj{"filename": o.TLSDir + "/tls.crt"},
					"private_key":       obj{"filename": o.TLSDir + "/tls.key"},
				}}},
			}}
		}
		listeners = append(listeners, obj{
			"name":          "mcp-gateway-" + strconv.Itoa(port),
			"address":       obj{"socket_address": obj{"address": "0.0.0.0", "port_value": port}},
			"filter_chains": []any{fc},
		})
	}
	return docs(obj{
		"admin":            obj{"address": obj{"socket_address": obj{"address": "127.0.0.1", "port_value": o.AdminPort}}},
		"static_resources": obj{"listeners": listeners, "clusters": clusters},
	}), nil
}

// envoyTokenService returns the host and ports Envoy reaches the token service at: the
// service of an Istio-form cluster name, or the listener addresses' host (the authority's
// when they listen on every interface).
func envoyTokenService(cfg *config.Config) (string, int, int, error) {
	ts := cfg.TokenService
	ph, pp, err := net.SplitHostPort(ts.Address)
	if err != nil {
		return "", 0, 0, &Error{Key: "token_service.address", Msg: "want host:port"}
	}
	_, ip, err := net.SplitHostPort(ts.InternalAddress)
	if err != nil {
		return "", 0, 0, &Error{Key: "token_service.internal_address", Msg: "want host:port"}
	}
	pub, _ := strconv.Atoi(pp)
	in, _ := strconv.Atoi(ip)
	host := ph
	if t, err := parseTokenService(cfg); err == nil {
		host = t.FQDN()
	} else if host == "" || host == "0.0.0.0" || host == "::" {
		host, _, _ = strings.Cut(ts.Authority, ":")
	}
	return host, pub, in, nil
}

func envoyCluster(name, host string, port int, tls bool) obj {
	typ := "STRICT_DNS"
	if net.ParseIP(host) != nil {
		typ = "STATIC"
	}
	c := obj{
		"name":            name,
		"type":            typ,
		"connect_timeout": "2s",
		"load_assignment": obj{"cluster_name": name, "endpoints": []any{obj{"lb_endpoints": []any{obj{"endpoint": obj{"address": obj{"socket_address": obj{"address": host, "port_value": port}}}}}}}},
	}
	if tls {
		c["transport_socket"] = obj{"name": "envoy.transport_sockets.tls", "typed_config": obj{
			"@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext",
			"sni":   host,
			"common_tls_context": obj{"validation_context": obj{
				"trusted_ca":                    obj{"filename": "/etc/ssl/certs/ca-certificates.crt"},
				"match_typed_subject_alt_names": []any{obj{"san_type": "DNS", "matcher": obj{"exact": host}}},
			}},
		}}
	}
	return c
}
