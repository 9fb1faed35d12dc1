package render

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/mcpmesh/gateway/shared/config"
)

// tokenService is where the token service runs in the mesh, read from the configuration:
// token_service.cluster names it in Istio's outbound cluster form
// (outbound|<internal port>||<service>.<namespace>.svc.<domain>), the listener addresses give
// its ports.
type tokenService struct {
	Name, Namespace, Domain  string
	PublicPort, InternalPort int
}

// FQDN is the service's host name.
func (t tokenService) FQDN() string {
	return t.Name + "." + t.Namespace + ".svc." + t.Domain
}

func (t tokenService) labels() map[string]any {
	return map[string]any{"app.kubernetes.io/name": t.Name, "app.kubernetes.io/part-of": "mcp-gateway"}
}

// parseTokenService reads the token service's place in the mesh from cfg.
func parseTokenService(cfg *config.Config) (tokenService, error) {
	var t tokenService
	ts := cfg.TokenService
	parts := strings.Split(ts.Cluster, "|")
	if len(parts) != 4 || parts[0] != "outbound" || parts[2] != "" {
		return t, &Error{Key: "token_service.cluster", Msg: fmt.Sprintf("in Istio the filter calls the token service through the outbound cluster outbound|<internal port>||<service>.<namespace>.svc.cluster.local, got %q (docs/istio.md; -envoy-only renders a plain Envoy bootstrap from this configuration)", ts.Cluster)}
	}
	port, err := strconv.Atoi(parts[1])
	if err != nil || port <= 0 || port > 65535 {
		return t, &Error{Key: "token_service.cluster", Msg: fmt.Sprintf("invalid port %q", parts[1])}
	}
	labels := strings.Split(parts[3], ".")
	if len(labels) < 4 || labels[2] != "svc" || !dnsLabel.MatchString(labels[0]) || !dnsLabel.MatchString(labels[1]) {
		return t, &Error{Key: "token_service.cluster", Msg: fmt.Sprintf("want the service's FQDN <service>.<namespace>.svc.<cluster domain> after the ports, got %q", parts[3])}
	}
	t = tokenService{Name: labels[0], Namespace: labels[1], Domain: strings.Join(labels[3:], "."), InternalPort: port}
	pub, err := listenPort("token_service.address", ts.Address)
	if err != nil {
		return t, err
	}
	in, err := listenPort("token_service.internal_address", ts.InternalAddress)
	if err != nil {
		return t, err
	}
	if in != port {
		return t, &Error{Key: "token_service.internal_address", Msg: fmt.Sprintf("port %d differs from the port %d of token_service.cluster", in, port)}
	}
	t.PublicPort = pub
	if a := ts.Authority; a != t.FQDN() && a != net.JoinHostPort(t.FQDN(), strconv.Itoa(port)) {
		return t, &Error{Key: "token_service.authority", Msg: fmt.Sprintf("want %s, the host of token_service.cluster, got %q", t.FQDN(), a)}
	}
	return t, nil
}

// listenPort returns the port of a listener address that must accept connections from other
// pods.
func listenPort(key, addr string) (int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, &Error{Key: key, Msg: "want host:port, got " + strconv.Quote(addr)}
	}
	if host != "" && host != "0.0.0.0" && host != "::" {
		return 0, &Error{Key: key, Msg: fmt.Sprintf("in a pod the token service must listen on every interface (0.0.0.0:%s), got %q", p, addr)}
	}
	port, err := strconv.Atoi(p)
	if err != nil || port <= 0 || port > 65535 {
		return 0, &Error{Key: key, Msg: "invalid port " + strconv.Quote(p)}
	}
	return port, nil
}
