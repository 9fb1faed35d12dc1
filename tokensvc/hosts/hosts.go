// Package hosts resolves the Host of a request to the token service's public listener to a
// configured host: the authenticate service host or a route host. Every public handler works
// from the resolved Host, whose origin comes from configuration, never from request headers,
// so a forged Host or X-Forwarded-* header cannot make the service mint metadata, issuers or
// links for an attacker's host.
package hosts

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/mcpmesh/gateway/shared/config"
)

// Host is a configured public host.
type Host struct {
	// Origin is scheme://host[:port] exactly as configured (the OAuth issuer of route hosts).
	Origin string
	// Authority is the lower-case host[:port] (port only when not the scheme default).
	Authority string
	// Authenticate is true for the authenticate service host.
	Authenticate bool
	// Routes are the routes whose from URL is on this host.
	Routes []*config.Route
}

// Secure reports whether the host is served over https (cookies get Secure).
func (h *Host) Secure() bool { return strings.HasPrefix(h.Origin, "https://") }

// ServerRoutes returns the mcp.server routes on h.
func (h *Host) ServerRoutes() []*config.Route { return h.filter("server") }

// ClientRoutes returns the mcp.client routes on h.
func (h *Host) ClientRoutes() []*config.Route { return h.filter("client") }

func (h *Host) filter(kind string) []*config.Route {
	var out []*config.Route
	for _, r := range h.Routes {
		if r.RouteKind() == kind {
			out = append(out, r)
		}
	}
	return out
}

// Table is the set of configured hosts.
type Table struct {
	byAuthority map[string]*Host
}

// NewTable builds the table from a validated configuration.
func NewTable(c *config.Config) *Table {
	t := &Table{byAuthority: map[string]*Host{}}
	if u, err := url.Parse(c.AuthenticateServiceURL); err == nil {
		a := Normalize(u.Host, u.Scheme)
		t.byAuthority[a] = &Host{Origin: u.Scheme + "://" + a, Authority: a, Authenticate: true}
	}
	for i := range c.Routes {
		r := &c.Routes[i]
		n := r.Normalized()
		h := t.byAuthority[n.Host]
		if h == nil {
			h = &Host{Origin: n.Scheme + "://" + n.Host, Authority: n.Host}
			t.byAuthority[n.Host] = h
		}
		h.Routes = append(h.Routes, r)
	}
	return t
}

// Lookup returns the configured host for a Host header value. An explicit port matches only
// the configured port, or the default port of that host's own scheme. Unknown hosts return nil.
func (t *Table) Lookup(hostHeader string) *Host {
	for _, scheme := range []string{"https", "http"} {
		h := t.byAuthority[Normalize(hostHeader, scheme)]
		if h != nil && strings.HasPrefix(h.Origin, scheme+"://") {
			return h
		}
	}
	if h := t.byAuthority[Normalize(hostHeader, "")]; h != nil {
		return h // the configured authority itself, with its non-default port
	}
	return nil
}

// All returns every configured host.
func (t *Table) All() []*Host {
	out := make([]*Host, 0, len(t.byAuthority))
	for _, h := range t.byAuthority {
		out = append(out, h)
	}
	return out
}

// Normalize lower-cases a host[:port], drops a trailing dot and the scheme's default port.
func Normalize(hostport, scheme string) string {
	hostport = strings.ToLower(hostport)
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = hostport, ""
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if (scheme == "https" && port == "443") || (scheme == "http" && port == "80") {
		port = ""
	}
	if port != "" {
		return net.JoinHostPort(host, port)
	}
	if strings.Contains(host, ":") {
		return "[" + host + "]"
	}
	return host
}

type ctxKey struct{}

// Middleware resolves r.Host against t; unknown hosts get 421 Misdirected Request and never
// reach the handlers. The resolved *Host is available through FromContext.
func (t *Table) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := t.Lookup(r.Host)
		if h == nil {
			http.Error(w, "misdirected request: this gateway serves no such host", http.StatusMisdirectedRequest)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, h)))
	})
}

// FromContext returns the Host resolved by Middleware.
func FromContext(ctx context.Context) (*Host, bool) {
	h, ok := ctx.Value(ctxKey{}).(*Host)
	return h, ok
}

// MustFromContext returns the Host resolved by Middleware. Handlers that the router reaches
// only behind Middleware use it; a request without one is a wiring error, and it panics.
func MustFromContext(ctx context.Context) *Host {
	h, ok := FromContext(ctx)
	if !ok || h == nil {
		panic("hosts: request has no resolved host (route the handler behind hosts.Middleware)")
	}
	return h
}

// WithHost returns ctx carrying h (for tests and internal callers).
func WithHost(ctx context.Context, h *Host) context.Context {
	return context.WithValue(ctx, ctxKey{}, h)
}
