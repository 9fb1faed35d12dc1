package gateway

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/shared/pluginconf"
	"github.com/mcpmesh/gateway/wasmtest/host"
)

// TokenService is the token service as the local gateway reaches it: its public handler (the
// gateway paths and the authenticate host) and its internal handler (the check API cluster).
type TokenService struct {
	Public   http.Handler
	Internal http.Handler
}

// Options configure a Gateway.
type Options struct {
	// Config is the validated gateway configuration.
	Config *config.Config
	// Module is the compiled filter.wasm.
	Module *host.Module
	// Workers is the number of filter VMs (Envoy worker threads); default 2.
	Workers int
	// TokenService serves gateway paths and check calls.
	TokenService TokenService
	// Transport carries requests to upstreams; default a transport with dial and header
	// timeouts and no proxy from the environment.
	Transport http.RoundTripper
	// Logger receives the filter's log lines and the gateway's own; default discards.
	Logger *slog.Logger
	// HostOptions, if set, adjusts the wasm host options (tests: clock, compat, fail strategy).
	HostOptions func(*host.Options)
	// Timeouts bound slow clients; zero fields take their defaults (see Timeouts).
	Timeouts Timeouts
}

// Gateway is the local gateway's handler.
type Gateway struct {
	cfg       *config.Config
	host      *host.Host
	handler   http.Handler // the filter chain in front of route
	table     *pluginconf.Table
	proxies   []*httputil.ReverseProxy // by route index of table
	auth      string                   // authenticate host authority
	public    http.Handler
	transport http.RoundTripper
	logger    *slog.Logger
	timeouts  Timeouts
	schemes   map[string]string // scheme of each listen address (tls.go)
	cert      *tls.Certificate  // served on https addresses
	buffers   copyBuffers       // the proxies' response copy buffers
}

// New starts the filter VMs and prepares routing.
func New(ctx context.Context, o Options) (*Gateway, error) {
	if o.Config == nil || o.Module == nil {
		return nil, errors.New("gateway: Config and Module are required")
	}
	if o.TokenService.Public == nil || o.TokenService.Internal == nil {
		return nil, errors.New("gateway: TokenService handlers are required")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Workers <= 0 {
		o.Workers = 2
	}
	pc := o.Config.PluginConfig()
	// The table must be built as the filter builds its own: a request the filter left
	// alone as another host's must never be routed to a route's upstream.
	g := &Gateway{cfg: o.Config, table: pluginconf.NewTable(pc.Routes), public: o.TokenService.Public, logger: o.Logger,
		timeouts: o.Timeouts.withDefaults()}
	g.transport = o.Transport
	if g.transport == nil {
		g.transport = &http.Transport{
			DialContext:           (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
			ResponseHeaderTimeout: 60 * time.Second,
			MaxIdleConnsPerHost:   64,
			IdleConnTimeout:       90 * time.Second,
		}
	}
	urls := []string{o.Config.AuthenticateServiceURL}
	for _, r := range o.Config.Routes {
		urls = append(urls, r.From)
	}
	schemes, err := addressSchemes(urls)
	if err != nil {
		return nil, err
	}
	g.schemes = schemes
	if err := g.loadCertificate(); err != nil {
		return nil, err
	}
	for i, r := range pc.Routes {
		cr, _ := o.Config.RouteByID(r.ID)
		u, err := url.Parse(cr.To)
		if err != nil {
			return nil, fmt.Errorf("gateway: routes[%d].to: %w", i, err)
		}
		g.proxies = append(g.proxies, g.newProxy(r, u))
	}
	if u, err := url.Parse(o.Config.AuthenticateServiceURL); err == nil {
		g.auth = strings.ToLower(u.Host)
	}
	ho := FilterOptions(o.Config, o.TokenService.Internal)
	ho.Workers, ho.Logger, ho.IdleWorkerFirst = o.Workers, o.Logger, true
	if o.HostOptions != nil {
		o.HostOptions(&ho)
	}
	h, err := host.New(ctx, o.Module, ho)
	if err != nil {
		return nil, fmt.Errorf("gateway: start filter: %w", err)
	}
	g.host = h
	g.handler = h.Handler(http.HandlerFunc(g.route), nil)
	return g, nil
}

// FilterOptions are the wasm host options under which the local gateway runs filter.wasm:
// the plugin's names, the plugin configuration derived from cfg (config.PluginConfigJSON),
// the token service cluster served by checkAPI, and the proxy log level at info (Envoy's
// default for the authorization records to be written). The local gateway and the policy
// tester (wasmtest/policytest) both start the filter with these, so that a policy decides
// the same way under both. Workers and Logger are left to the caller.
func FilterOptions(cfg *config.Config, checkAPI http.Handler) host.Options {
	return host.Options{
		PluginName:   "mcp-gateway",
		RootID:       "mcp-gateway",
		VMID:         "mcp-gateway",
		PluginConfig: cfg.PluginConfigJSON(),
		Clusters:     map[string]host.Cluster{cfg.TokenService.Cluster: {Handler: checkAPI}},
		LogLevel:     host.LogInfo,
	}
}

// Host returns the wasm host running the filter.
func (g *Gateway) Host() *host.Host { return g.host }

// Close stops the filter VMs.
func (g *Gateway) Close() error { return g.host.Close() }

// Addresses returns the host:port pairs the gateway must listen on: each route's `from`
// authority and the authenticate service's.
func (g *Gateway) Addresses() []string { return AddressesOf(g.cfg) }

// AddressesOf returns the host:port pairs a gateway for cfg listens on (see Addresses).
func AddressesOf(cfg *config.Config) []string {
	seen := map[string]bool{}
	add := func(raw string) {
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" {
			return
		}
		a := u.Host
		if u.Port() == "" {
			a = net.JoinHostPort(u.Hostname(), map[string]string{"http": "80", "https": "443"}[u.Scheme])
		}
		seen[a] = true
	}
	add(cfg.AuthenticateServiceURL)
	for _, r := range cfg.Routes {
		add(r.From)
	}
	out := make([]string, 0, len(seen))
	for a := range seen {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}

// ServeHTTP runs one request through the filter (streaming, as Envoy does) and routes what
// the filter lets through.
//
// The local gateway is the edge, as an Envoy ingress with use_remote_address: a client's
// X-Request-Id is replaced by the host's own, so that nobody can give a request the ID of
// another in the authorization log, the check call or an error answer.
//
// A request body must arrive within a deadline (Timeouts), lifted once it has been read.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	r.Header.Del("X-Request-Id")
	if g.misdirected(w, r) {
		return
	}
	g.boundBody(w, r)
	g.handler.ServeHTTP(w, r)
}

// toTokenService reports whether route would hand r to the token service.
func (g *Gateway) toTokenService(r *http.Request) bool {
	_, m := g.table.Match(r.Host, r.URL.RequestURI())
	return m == pluginconf.GatewayPath || (m == pluginconf.ForeignHost && strings.EqualFold(r.Host, g.auth))
}

// route sends a request the filter released to the token service or to the route's upstream.
func (g *Gateway) route(w http.ResponseWriter, r *http.Request) {
	idx, m := g.table.Match(r.Host, r.URL.RequestURI())
	switch {
	case m == pluginconf.GatewayPath || (m == pluginconf.ForeignHost && strings.EqualFold(r.Host, g.auth)):
		g.public.ServeHTTP(w, r)
	case m == pluginconf.Routed:
		if !bufferBody(w, r) {
			return
		}
		g.proxies[idx].ServeHTTP(w, r)
	case m == pluginconf.ForeignHost:
		writeError(w, http.StatusMisdirectedRequest, "misdirected_request", "this gateway serves no such host")
	default:
		writeError(w, http.StatusNotFound, "not_found", "no route for this path")
	}
}

func writeError(w http.ResponseWriter, status int, code, description string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"error":%q,"error_description":%q}`, code, description)
}
