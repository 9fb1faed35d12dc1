package render

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// Placements of the filter.
const (
	PlacementIngress  = "ingress"  // the Istio ingress gateway (north-south)
	PlacementWaypoint = "waypoint" // an ambient waypoint (east-west)
	PlacementSidecar  = "sidecar"  // the MCP servers' sidecars (east-west)
)

// Routing flavours.
const (
	RoutingIstio      = "istio"       // VirtualService
	RoutingGatewayAPI = "gateway-api" // HTTPRoute + ReferenceGrant
)

// Options are the deployment choices the configuration does not hold.
type Options struct {
	// Placement is PlacementIngress (default), PlacementWaypoint or PlacementSidecar.
	Placement string
	// Routing is RoutingIstio (default) or RoutingGatewayAPI.
	Routing string
	// ModuleImage is the OCI repository of the module, without tag or digest.
	ModuleImage string
	// ModuleDigest is the manifest digest ("sha256:<64 hex>") of the pushed module image
	// (`make oci` prints it); the WasmPlugin pins url and sha256 to it.
	ModuleDigest string
	// TokenServiceImage is the token service image reference (tag or digest).
	TokenServiceImage string
	// IngressNamespace and IngressSelector find the ingress gateway (PlacementIngress).
	IngressNamespace string
	IngressSelector  map[string]string
	// IngressServiceAccount is the ingress gateway's service account.
	IngressServiceAccount string
	// Gateway is the Istio Gateway (namespace/name) the VirtualServices bind to, or the
	// Gateway API Gateway of the HTTPRoutes (PlacementIngress).
	Gateway string
	// Waypoint is the waypoint Gateway's name (PlacementWaypoint), in WorkloadNamespace.
	Waypoint string
	// WorkloadNamespace holds the MCP servers (PlacementWaypoint, PlacementSidecar).
	WorkloadNamespace string
	// WorkloadSelector selects the MCP server pods (PlacementSidecar).
	WorkloadSelector map[string]string
	// FilterPrincipals are the SPIFFE principals of the proxies that run the filter; default
	// from the placement.
	FilterPrincipals []string
	// TrustDomain of the mesh (default cluster.local).
	TrustDomain string
}

// Defaults.
const (
	DefaultModuleImage       = "registry.example.com/mcp-gateway/filter"
	DefaultTokenServiceImage = "registry.example.com/mcp-gateway/tokensvc:latest"
	DefaultIngressNamespace  = "istio-system"
	DefaultIngressSA         = "istio-ingressgateway-service-account"
	DefaultGateway           = "istio-system/mcp-gateway"
	DefaultWaypoint          = "waypoint"
	DefaultTrustDomain       = "cluster.local"
)

var (
	digestRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
	dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	imageRE  = regexp.MustCompile(`^[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)+$`)
)

func (o *Options) withDefaults() (Options, error) {
	r := *o
	set := func(p *string, v string) {
		if *p == "" {
			*p = v
		}
	}
	set(&r.Placement, PlacementIngress)
	set(&r.Routing, RoutingIstio)
	set(&r.ModuleImage, DefaultModuleImage)
	set(&r.TokenServiceImage, DefaultTokenServiceImage)
	set(&r.IngressNamespace, DefaultIngressNamespace)
	set(&r.IngressServiceAccount, DefaultIngressSA)
	set(&r.Gateway, DefaultGateway)
	set(&r.Waypoint, DefaultWaypoint)
	set(&r.TrustDomain, DefaultTrustDomain)
	if r.IngressSelector == nil {
		r.IngressSelector = map[string]string{"istio": "ingressgateway"}
	}
	switch r.Placement {
	case PlacementIngress, PlacementWaypoint, PlacementSidecar:
	default:
		return r, &Error{Key: "-placement", Msg: fmt.Sprintf("want ingress, waypoint or sidecar, got %q", r.Placement)}
	}
	switch r.Routing {
	case RoutingIstio, RoutingGatewayAPI:
	default:
		return r, &Error{Key: "-routing", Msg: fmt.Sprintf("want istio or gateway-api, got %q", r.Routing)}
	}
	if r.Placement == PlacementWaypoint && r.Routing != RoutingGatewayAPI {
		return r, &Error{Key: "-routing", Msg: "a waypoint takes Gateway API routes: use -routing gateway-api with -placement waypoint"}
	}
	if r.Placement != PlacementIngress {
		if !dnsLabel.MatchString(r.WorkloadNamespace) {
			return r, &Error{Key: "-workload-namespace", Msg: "is required with -placement " + r.Placement + " (the namespace of the MCP servers)"}
		}
	}
	if r.Placement == PlacementSidecar && len(r.WorkloadSelector) == 0 {
		return r, &Error{Key: "-workload-selector", Msg: "is required with -placement sidecar (labels of the MCP server pods)"}
	}
	if !digestRE.MatchString(r.ModuleDigest) {
		return r, &Error{Key: "-module-digest", Msg: fmt.Sprintf("want the module image's manifest digest sha256:<64 lower-case hex> (make oci prints it, or give -module-layout), got %q", r.ModuleDigest)}
	}
	if !imageRE.MatchString(r.ModuleImage) {
		return r, &Error{Key: "-module-image", Msg: fmt.Sprintf("want a repository such as registry.example.com/mcp-gateway/filter, without tag or digest, got %q", r.ModuleImage)}
	}
	if strings.ContainsAny(r.TokenServiceImage, " \t\n\"") || r.TokenServiceImage == "" {
		return r, &Error{Key: "-tokensvc-image", Msg: fmt.Sprintf("want an image reference, got %q", r.TokenServiceImage)}
	}
	for _, g := range []struct{ key, v string }{{"-gateway", r.Gateway}} {
		ns, name, ok := strings.Cut(g.v, "/")
		if !ok || !dnsLabel.MatchString(ns) || !dnsLabel.MatchString(name) {
			return r, &Error{Key: g.key, Msg: fmt.Sprintf("want namespace/name, got %q", g.v)}
		}
	}
	if !dnsLabel.MatchString(r.IngressNamespace) || !dnsLabel.MatchString(r.Waypoint) {
		return r, &Error{Key: "-ingress-namespace", Msg: "namespace and waypoint names must be DNS labels"}
	}
	return r, nil
}

// principals returns the SPIFFE principals of the proxies that run the filter.
func (o *Options) principals() []string {
	if len(o.FilterPrincipals) > 0 {
		p := append([]string(nil), o.FilterPrincipals...)
		sort.Strings(p)
		return p
	}
	switch {
	case o.Placement == PlacementIngress && o.Routing == RoutingGatewayAPI:
		// Istio names the service account of a Gateway's proxy <gateway>-<class> ("istio").
		ns, name, _ := strings.Cut(o.Gateway, "/")
		return []string{o.TrustDomain + "/ns/" + ns + "/sa/" + name + "-istio"}
	case o.Placement == PlacementIngress:
		return []string{o.TrustDomain + "/ns/" + o.IngressNamespace + "/sa/" + o.IngressServiceAccount}
	case o.Placement == PlacementWaypoint:
		return []string{o.TrustDomain + "/ns/" + o.WorkloadNamespace + "/sa/" + o.Waypoint}
	}
	return []string{o.TrustDomain + "/ns/" + o.WorkloadNamespace + "/sa/*"}
}

// Error is a configuration or option the renderer cannot render, with the key it concerns.
type Error struct {
	Key string
	Msg string
}

func (e *Error) Error() string { return "render: " + e.Key + ": " + e.Msg }
