package render

import (
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/shared/pluginconf"
)

// upstream is a route's `to`, split for route configurations.
type upstream struct {
	Host string // host name
	Port int    // port (the scheme's default when the URL has none)
	Path string // path prefix without trailing slash ("" for the root)
	TLS  bool
}

func parseUpstream(raw string) upstream {
	u, _ := url.Parse(raw) // validated by config
	p, _ := strconv.Atoi(u.Port())
	if p == 0 {
		p = map[string]int{"http": 80, "https": 443}[u.Scheme]
	}
	return upstream{Host: u.Hostname(), Port: p, Path: strings.TrimSuffix(u.Path, "/"), TLS: u.Scheme == "https"}
}

// routesOf returns the plugin routes of host (most specific first) with their upstreams.
func (r *renderer) routesOf(host string) ([]pluginconf.Route, []upstream, []int) {
	var rs []pluginconf.Route
	var us []upstream
	var idx []int
	for _, pr := range r.pc.Routes {
		if pr.Host != host {
			continue
		}
		for i := range r.cfg.Routes {
			if r.cfg.Routes[i].Normalized().ID == pr.ID {
				rs = append(rs, pr)
				us = append(us, parseUpstream(r.cfg.Routes[i].To))
				idx = append(idx, i)
			}
		}
	}
	return rs, us, idx
}

func (r *renderer) routing() ([]obj, error) {
	if r.o.Routing == RoutingGatewayAPI {
		return r.httpRoutes()
	}
	return r.virtualServices(), nil
}

// istioMatches are VirtualService matches for the gateway paths.
func istioGatewayMatches(port int) []any {
	var out []any
	for _, m := range paths.GatewayMatches() {
		k := "exact"
		if m.Prefix {
			k = "prefix"
		}
		out = append(out, withPort(obj{"uri": obj{k: m.Path}}, port))
	}
	return out
}

func withPort(m obj, port int) obj {
	if port != 0 {
		m["port"] = port
	}
	return m
}

func (r *renderer) tsDestination() obj {
	return obj{"destination": obj{"host": r.ts.FQDN(), "port": obj{"number": r.ts.PublicPort}}}
}

// virtualServices: one per route host: the gateway paths to the token service, then each
// route's prefix (whole segments) to its upstream as the local gateway forwards it; and one
// for the authenticate host, wholly the token service's.
func (r *renderer) virtualServices() []obj {
	gateways := []any{r.o.Gateway}
	if r.o.Placement == PlacementSidecar {
		gateways = []any{"mesh"}
	}
	routeHosts, authHost := r.hosts()
	var out []obj
	vs := func(host string, http []any) obj {
		name, _ := hostName(host)
		return obj{
			"apiVersion": "networking.istio.io/v1",
			"kind":       "VirtualService",
			"metadata":   meta(objName("mcp-gateway", host), r.ts.Namespace, partOf()),
			"spec":       obj{"hosts": []any{name}, "gateways": gateways, "http": http},
		}
	}
	for _, host := range routeHosts {
		_, port := hostName(host)
		http := []any{obj{"name": "gateway-paths", "match": istioGatewayMatches(port), "route": []any{r.tsDestination()}}}
		rs, us, idx := r.routesOf(host)
		for k, rt := range rs {
			http = append(http, vsRouteRules(rt, us[k], idx[k], port)...)
		}
		out = append(out, vs(host, http))
	}
	if authHost != "" && !contains(routeHosts, authHost) {
		_, port := hostName(authHost)
		out = append(out, vs(authHost, []any{obj{"name": "authenticate", "match": []any{withPort(obj{"uri": obj{"prefix": "/"}}, port)}, "route": []any{r.tsDestination()}}}))
	}
	return out
}

// vsRouteRules routes a route's prefix (on segment boundaries) to its upstream, rewriting the
// path as the local gateway does: the `from` prefix is replaced by the `to` path.
func vsRouteRules(rt pluginconf.Route, u upstream, i, port int) []any {
	dest := []any{obj{"destination": obj{"host": u.Host, "port": obj{"number": u.Port}}}}
	name := "route-" + strconv.Itoa(i)
	if rt.PathPrefix == "/" {
		rule := obj{"name": name, "match": []any{withPort(obj{"uri": obj{"prefix": "/"}}, port)}, "route": dest, "rewrite": obj{"authority": u.Host}}
		if u.Path != "" {
			rule["rewrite"].(obj)["uri"] = u.Path + "/"
		}
		return []any{rule}
	}
	exact := obj{"name": name + "-exact", "match": []any{withPort(obj{"uri": obj{"exact": rt.PathPrefix}}, port)}, "route": dest, "rewrite": obj{"authority": u.Host}}
	sub := obj{"name": name, "match": []any{withPort(obj{"uri": obj{"prefix": rt.PathPrefix + "/"}}, port)}, "route": dest, "rewrite": obj{"authority": u.Host}}
	if u.Path != rt.PathPrefix {
		exact["rewrite"].(obj)["uri"] = orRoot(u.Path)
		sub["rewrite"].(obj)["uri"] = u.Path + "/"
	}
	return []any{exact, sub}
}

func orRoot(p string) string {
	if p == "" {
		return "/"
	}
	return p
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// service is a Kubernetes Service named by a host.
type service struct{ Name, Namespace string }

// serviceOf reads <name>.<namespace>.svc[.<domain>] or <name>.<namespace>.
func serviceOf(host, defaultNS string) (service, bool) {
	l := strings.Split(host, ".")
	switch {
	case len(l) == 1 && dnsLabel.MatchString(l[0]):
		return service{l[0], defaultNS}, true
	case len(l) == 2 || len(l) >= 3 && l[2] == "svc":
		if dnsLabel.MatchString(l[0]) && dnsLabel.MatchString(l[1]) {
			return service{l[0], l[1]}, true
		}
	}
	return service{}, false
}

// httpRoutes: the Gateway API form of virtualServices, with a ReferenceGrant in each
// namespace whose Services the routes name.
func (r *renderer) httpRoutes() ([]obj, error) {
	routeHosts, authHost := r.hosts()
	gwNS, gwName, _ := strings.Cut(r.o.Gateway, "/")
	tsRef := obj{"name": r.ts.Name, "namespace": r.ts.Namespace, "port": r.ts.PublicPort}
	routeNS := r.ts.Namespace
	if r.o.Placement == PlacementWaypoint {
		routeNS = r.o.WorkloadNamespace
	}
	grants := map[string]bool{}
	ref := func(s service, port int) obj {
		if s.Namespace != routeNS {
			grants[s.Namespace] = true
		}
		return obj{"name": s.Name, "namespace": s.Namespace, "port": port}
	}
	var out []obj
	hr := func(host string, rules []any) (obj, error) {
		name, port := hostName(host)
		spec := obj{"rules": rules}
		switch r.o.Placement {
		case PlacementWaypoint:
			s, ok := serviceOf(name, r.o.WorkloadNamespace)
			if !ok || s.Namespace != r.o.WorkloadNamespace {
				return nil, &Error{Key: "routes", Msg: fmt.Sprintf("with -placement waypoint every route host must be a Service in %s (<service>.%s.svc.cluster.local), got %q", r.o.WorkloadNamespace, r.o.WorkloadNamespace, name)}
			}
			pr := obj{"group": "", "kind": "Service", "name": s.Name}
			if port != 0 {
				pr["port"] = port
			}
			spec["parentRefs"] = []any{pr}
		default:
			pr := obj{"name": gwName, "namespace": gwNS}
			if port != 0 {
				pr["port"] = port
			}
			spec["parentRefs"] = []any{pr}
			spec["hostnames"] = []any{name}
		}
		return obj{
			"apiVersion": "gateway.networking.k8s.io/v1",
			"kind":       "HTTPRoute",
			"metadata":   meta(objName("mcp-gateway", host), routeNS, partOf()),
			"spec":       spec,
		}, nil
	}
	tsRef = ref(service{r.ts.Name, r.ts.Namespace}, r.ts.PublicPort)
	for _, host := range routeHosts {
		gm := gatewayAPIMatches()
		rules := []any{obj{"matches": gm, "backendRefs": []any{tsRef}}}
		rs, us, idx := r.routesOf(host)
		for k, rt := range rs {
			s, ok := serviceOf(us[k].Host, r.ts.Namespace)
			if !ok {
				return nil, &Error{Key: "routes[" + strconv.Itoa(idx[k]) + "].to", Msg: fmt.Sprintf("with -routing gateway-api the upstream must be a Kubernetes Service (<service>.<namespace>.svc.cluster.local), got %q", us[k].Host)}
			}
			rule := obj{
				"matches":     []any{obj{"path": obj{"type": "PathPrefix", "value": rt.PathPrefix}}},
				"backendRefs": []any{ref(s, us[k].Port)},
			}
			rw := obj{"hostname": us[k].Host}
			if u := orRoot(us[k].Path); u != rt.PathPrefix {
				rw["path"] = obj{"type": "ReplacePrefixMatch", "replacePrefixMatch": u}
			}
			rule["filters"] = []any{obj{"type": "URLRewrite", "urlRewrite": rw}}
			rules = append(rules, rule)
			if rt.PathPrefix == "/" {
				// PathPrefix "/.gateway/" also matches "/.gateway", which is not a gateway
				// path (paths.IsGateway): an Exact match, which takes precedence, keeps it
				// with the route's upstream.
				keep := obj{}
				for kk, vv := range rule {
					keep[kk] = vv
				}
				keep["matches"] = []any{obj{"path": obj{"type": "Exact", "value": strings.TrimSuffix(paths.Prefix, "/")}}}
				rules = append(rules, keep)
			}
		}
		o, err := hr(host, rules)
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	if authHost != "" && !contains(routeHosts, authHost) && r.o.Placement != PlacementWaypoint {
		o, err := hr(authHost, []any{obj{"matches": []any{obj{"path": obj{"type": "PathPrefix", "value": "/"}}}, "backendRefs": []any{tsRef}}})
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	var nss []string
	for ns := range grants {
		nss = append(nss, ns)
	}
	sort.Strings(nss)
	for _, ns := range nss {
		out = append(out, obj{
			"apiVersion": "gateway.networking.k8s.io/v1beta1",
			"kind":       "ReferenceGrant",
			"metadata":   meta(objName("mcp-gateway-from", routeNS), ns, partOf()),
			"spec": obj{
				"from": []any{obj{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "namespace": routeNS}},
				"to":   []any{obj{"group": "", "kind": "Service"}},
			},
		})
	}
	return out, nil
}

// gatewayAPIMatches is paths.GatewayMatches in Gateway API form. A PathPrefix matches whole
// segments with or without a trailing slash, so "X" or "X/" as an exact path plus "X/" as a
// prefix become one PathPrefix "X".
func gatewayAPIMatches() []any {
	ms := paths.GatewayMatches()
	has := map[paths.Match]bool{}
	for _, m := range ms {
		has[m] = true
	}
	var out []any
	for _, m := range ms {
		switch {
		case m.Prefix && has[paths.Match{Path: strings.TrimSuffix(m.Path, "/")}]:
			// covered by the PathPrefix of its exact path
		case m.Prefix:
			out = append(out, obj{"path": obj{"type": "PathPrefix", "value": m.Path}})
		case has[paths.Match{Path: m.Path + "/", Prefix: true}]:
			out = append(out, obj{"path": obj{"type": "PathPrefix", "value": m.Path}})
		default:
			out = append(out, obj{"path": obj{"type": "Exact", "value": m.Path}})
		}
	}
	return out
}
