package render

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	networkingapi "istio.io/api/networking/v1alpha3"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/shared/pluginconf"
)

// routingConfig has nested prefixes and a root route on one host, to exercise precedence.
const routingConfig = `
runtime_flags: {mcp: true}
authenticate_service_url: https://auth.example.com
idp_provider: oidc
idp_provider_url: https://idp.example.com
idp_client_id: gw
token_service:
  address: 0.0.0.0:8480
  internal_address: 0.0.0.0:8481
  cluster: outbound|8481||tokensvc.gw.svc.cluster.local
  authority: tokensvc.gw.svc.cluster.local
storage: {type: memory}
routes:
  - from: https://mcp.example.com/tools
    to: http://tools.apps.svc.cluster.local:8080/mcp
    mcp: {server: {}}
  - from: https://mcp.example.com/tools/admin
    to: http://admin.apps.svc.cluster.local:8080
    mcp: {server: {}}
  - from: https://mcp.example.com
    to: http://root.apps.svc.cluster.local
    policy: {allow: {and: [{authenticated_user: true}]}}
  - from: https://other.example.com:8443/mcp
    to: http://other.apps:9000/x
    mcp: {server: {}}
`

const tsHost = "tokensvc.gw.svc.cluster.local"

// oracle says where a request must go: the token service exactly when paths.IsGateway says
// so, else the upstream host of the route the filter's own table picks, else nowhere ("").
func oracle(tbl *pluginconf.Table, cfg *config.Config, host, path string) (string, bool) {
	idx, m := tbl.Match(host, path)
	switch m {
	case pluginconf.GatewayPath:
		return tsHost, true
	case pluginconf.Routed:
		r, _ := cfg.RouteByID(cfg.PluginConfig().Routes[idx].ID)
		return parseUpstream(r.To).Host, true
	case pluginconf.NoRoute:
		return "", true
	}
	return "", false // ambiguous paths are rejected before routing (normalize_path, the filter)
}

func testPaths() []string {
	ps := []string{"/", "/tools", "/tools/", "/tools/x", "/toolsx", "/tools/admin", "/tools/adminx", "/tools/admin/y",
		"/mcp", "/mcp/", "/mcpx", "/x", "/.gateway", "/.gateway/", "/.gateway/mcp/token", "/.gatewayx",
		"/.well-known/oauth-authorization-server", "/.well-known/oauth-authorization-server/tools",
		"/.well-known/oauth-authorization-serverx", "/.well-known/oauth-protected-resource/mcp",
		"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resourcex",
		"/.well-known/gateway/jwks.json", "/.well-known/gateway/jwks.jsonx", "/.well-known/gateway/",
		"/.well-known/openid-configuration", "/tools/.gateway/x"}
	segs := []string{"tools", "admin", "mcp", ".gateway", ".well-known", "oauth-protected-resource", "oauth-authorization-server", "gateway", "jwks.json", "x", "toolsx", ""}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 400 {
		var b strings.Builder
		for range 1 + rng.IntN(4) {
			b.WriteString("/" + segs[rng.IntN(len(segs))])
		}
		ps = append(ps, b.String())
	}
	return ps
}

// vsDestination evaluates VirtualServices as Istio does: the VirtualService of the host, its
// http rules in order, the first whose any match matches.
func vsDestination(vss []*networkingapi.VirtualService, host string, port uint32, path string) string {
	for _, vs := range vss {
		if vs.GetHosts()[0] != host {
			continue
		}
		for _, h := range vs.GetHttp() {
			for _, m := range h.GetMatch() {
				if m.GetPort() != 0 && m.GetPort() != port {
					continue
				}
				u := m.GetUri()
				if u.GetExact() != "" && path == u.GetExact() || u.GetPrefix() != "" && strings.HasPrefix(path, u.GetPrefix()) {
					return h.GetRoute()[0].GetDestination().GetHost()
				}
			}
		}
	}
	return ""
}

// httpRouteDestination evaluates HTTPRoutes by Gateway API precedence: an Exact match before
// any prefix, then the longest PathPrefix, which matches whole path elements.
func httpRouteDestination(hrs []*gatewayv1.HTTPRoute, host, path string) string {
	best, bestScore := "", -1
	for _, hr := range hrs {
		if len(hr.Spec.Hostnames) > 0 && string(hr.Spec.Hostnames[0]) != host {
			continue
		}
		for _, rule := range hr.Spec.Rules {
			for _, m := range rule.Matches {
				v := *m.Path.Value
				score := -1
				switch *m.Path.Type {
				case gatewayv1.PathMatchExact:
					if path == v {
						score = 1 << 20
					}
				case gatewayv1.PathMatchPathPrefix:
					p := strings.TrimSuffix(v, "/")
					if p == "" || path == p || strings.HasPrefix(path, p+"/") {
						score = len(p)
					}
				}
				if score > bestScore {
					be := rule.BackendRefs[0]
					best, bestScore = string(be.Name)+"."+string(*be.Namespace), score
				}
			}
		}
	}
	return best
}

// envoyDestination evaluates an Envoy route configuration: the virtual host by domain, the
// first route that matches.
func envoyDestination(rc *routev3.RouteConfiguration, authority, path string) string {
	for _, vh := range rc.GetVirtualHosts() {
		hit := false
		for _, d := range vh.GetDomains() {
			hit = hit || d == authority || d == "*"
		}
		if !hit {
			continue
		}
		for _, r := range vh.GetRoutes() {
			m := r.GetMatch()
			ok := false
			switch {
			case m.GetPath() != "":
				ok = path == m.GetPath()
			case m.GetPathSeparatedPrefix() != "":
				p := m.GetPathSeparatedPrefix()
				ok = path == p || strings.HasPrefix(path, p+"/")
			case m.GetPrefix() != "":
				ok = strings.HasPrefix(path, m.GetPrefix())
			}
			if ok {
				return r.GetRoute().GetCluster()
			}
		}
		return ""
	}
	return ""
}

// TestRouting_GatewayPathsReachTheTokenServiceExactlyWhenIsGatewaySaysSo evaluates the rendered
// VirtualServices, HTTPRoutes and Envoy routes for many paths against the filter's own table.
func TestRouting_GatewayPathsReachTheTokenServiceExactlyWhenIsGatewaySaysSo(t *testing.T) {
	t.Parallel()
	cfg, err := config.Parse([]byte(routingConfig), lookup(exampleEnv))
	if err != nil {
		t.Fatal(err)
	}
	tbl := pluginconf.NewTable(cfg.PluginConfig().Routes)
	istioFiles := renderConfig(t, []byte(routingConfig), Options{})
	gwFiles := renderConfig(t, []byte(routingConfig), Options{Routing: RoutingGatewayAPI})
	var vss []*networkingapi.VirtualService
	for _, d := range decodeAll(t, istioFiles[FileRouting]) {
		vss = append(vss, d.Obj.(*networkingapi.VirtualService))
	}
	var hrs []*gatewayv1.HTTPRoute
	for _, d := range decodeAll(t, gwFiles[FileRouting]) {
		if hr, ok := d.Obj.(*gatewayv1.HTTPRoute); ok {
			hrs = append(hrs, hr)
		}
	}
	bs, err := decodeEnvoy(istioFiles[FileEnvoy])
	if err != nil {
		t.Fatal(err)
	}
	rcs := map[uint32]*routev3.RouteConfiguration{}
	for _, l := range bs.GetStaticResources().GetListeners() {
		var hcm hcmv3.HttpConnectionManager
		if err := l.GetFilterChains()[0].GetFilters()[0].GetTypedConfig().UnmarshalTo(&hcm); err != nil {
			t.Fatal(err)
		}
		rcs[l.GetAddress().GetSocketAddress().GetPortValue()] = hcm.GetRouteConfig()
	}
	upstreamCluster := func(host string) string {
		for _, r := range cfg.Routes {
			if u := parseUpstream(r.To); u.Host == host {
				return "upstream-" + u.Host + "-" + strconv.Itoa(u.Port)
			}
		}
		return ""
	}
	svcName := func(host string) string { // tools.apps.svc.cluster.local -> tools.apps
		s, _ := serviceOf(host, "")
		if s.Name == "" {
			return ""
		}
		return s.Name + "." + s.Namespace
	}
	checked := 0
	for _, h := range []struct {
		host string
		port uint32
	}{{"mcp.example.com", 443}, {"other.example.com:8443", 8443}} {
		name, _ := hostName(h.host)
		for _, p := range testPaths() {
			want, ok := oracle(tbl, cfg, h.host, p)
			if !ok {
				continue
			}
			checked++
			if paths.IsGateway(p) != (want == tsHost) {
				t.Fatalf("oracle disagrees with IsGateway on %s", p)
			}
			if got := vsDestination(vss, name, portOf(h.host), p); got != want {
				t.Errorf("VirtualService %s%s → %q, want %q", h.host, p, got, want)
			}
			wantGW := svcName(want)
			if want == "" && p == "/.gateway" {
				wantGW = svcName(tsHost) // no route covers it: the token service answers 404
			}
			if got := httpRouteDestination(hrs, name, p); got != wantGW && !(want == "" && got == "") {
				t.Errorf("HTTPRoute %s%s → %q, want %q", h.host, p, got, wantGW)
			}
			wantEnvoy := upstreamCluster(want)
			if want == tsHost {
				wantEnvoy = envoyPublicCluster
			}
			if got := envoyDestination(rcs[h.port], h.host, p); got != wantEnvoy {
				t.Errorf("Envoy %s%s → %q, want %q", h.host, p, got, wantEnvoy)
			}
		}
	}
	if checked < 400 {
		t.Fatalf("only %d paths checked", checked)
	}
}

func portOf(host string) uint32 {
	_, p := hostName(host)
	return uint32(p)
}
