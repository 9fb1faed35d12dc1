package plugin

import (
	"strings"

	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/shared/pluginconf"
	"github.com/mcpmesh/gateway/shared/policy"
)

// route is a configured route with its parsed policy.
type route struct {
	pluginconf.Route
	policy *policy.Policy
	// resourceMetadata is the RFC 9728 URL advertised in WWW-Authenticate.
	resourceMetadata string
	// origin is scheme://host.
	origin string
}

// routeTable finds the route of a request by authority and path.
type routeTable struct {
	byHost map[string][]*route // routes of a host, longest path prefix first
}

func newRouteTable(routes []*route) routeTable {
	t := routeTable{byHost: map[string][]*route{}}
	for _, r := range routes {
		t.byHost[r.Host] = append(t.byHost[r.Host], r)
	}
	for _, rs := range t.byHost {
		// Longest prefix first: a stable insertion sort keeps configuration order for ties.
		for i := 1; i < len(rs); i++ {
			for j := i; j > 0 && len(rs[j].PathPrefix) > len(rs[j-1].PathPrefix); j-- {
				rs[j], rs[j-1] = rs[j-1], rs[j]
			}
		}
	}
	return t
}

// matchResult says what a request's authority and path are to the gateway.
type matchResult uint8

const (
	// foreignHost: the authority is not a gateway host; the filter leaves the request alone.
	foreignHost matchResult = iota
	// gatewayPath: a token-service path on a gateway host; routed there untouched.
	gatewayPath
	// routed: the request belongs to a route.
	routed
	// noRoute: a gateway host, but no route covers the path.
	noRoute
	// badPath: the path is ambiguous (dot segments, encoded separators, backslashes).
	badPath
)

// match resolves authority and the raw :path (query included).
func (t *routeTable) match(authority, rawPath string) (*route, matchResult) {
	rs := t.byHost[normalizeAuthority(authority, t)]
	if rs == nil {
		return nil, foreignHost
	}
	path := rawPath
	if i := strings.IndexAny(path, "?#"); i >= 0 {
		path = path[:i]
	}
	if !safePath(path) {
		return nil, badPath
	}
	if paths.IsGateway(path) {
		return nil, gatewayPath
	}
	for _, r := range rs {
		if prefixMatches(r.PathPrefix, path) {
			return r, routed
		}
	}
	return nil, noRoute
}

// prefixMatches reports whether path is under prefix on a segment boundary.
func prefixMatches(prefix, path string) bool {
	if prefix == "/" {
		return true
	}
	return strings.HasPrefix(path, prefix) && (len(path) == len(prefix) || path[len(prefix)] == '/')
}

// safePath refuses paths that different parsers could resolve differently: dot segments,
// percent-encoded dots, slashes or backslashes, backslashes, empty segments and control bytes.
func safePath(p string) bool {
	if p == "" || p[0] != '/' {
		return p == "*" // OPTIONS * is harmless
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c < 0x20 || c == 0x7f || c == '\\':
			return false
		case c == '/' && i+1 < len(p) && p[i+1] == '/':
			return false
		case c == '%' && i+2 < len(p):
			h := strings.ToLower(p[i+1 : i+3])
			if h == "2e" || h == "2f" || h == "5c" || h == "00" {
				return false
			}
		case c == '.' && (i == 0 || p[i-1] == '/'):
			rest := p[i+1:]
			if rest == "" || rest[0] == '/' || (rest[0] == '.' && (len(rest) == 1 || rest[1] == '/')) {
				return false
			}
		}
	}
	return true
}

// normalizeAuthority lower-cases the authority, drops a trailing dot on the host, and drops
// the port when it is the default of the scheme some route of that host uses.
func normalizeAuthority(a string, t *routeTable) string {
	a = strings.ToLower(a)
	host, port := a, ""
	if i := strings.LastIndexByte(a, ':'); i >= 0 && !strings.Contains(a[i:], "]") {
		host, port = a[:i], a[i+1:]
	}
	host = strings.TrimSuffix(host, ".")
	if port == "" {
		return host
	}
	full := host + ":" + port
	if _, ok := t.byHost[full]; ok {
		return full
	}
	if rs := t.byHost[host]; rs != nil {
		if (port == "443" && rs[0].Scheme == "https") || (port == "80" && rs[0].Scheme == "http") {
			return host
		}
	}
	return full
}
