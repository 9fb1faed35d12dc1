package pluginconf

import (
	"strings"

	"github.com/mcpmesh/gateway/shared/paths"
)

// Match says what a request's authority and path are to the gateway.
type Match uint8

const (
	// ForeignHost: the authority is not a gateway host; the gateway leaves the request alone.
	ForeignHost Match = iota
	// GatewayPath: a token-service path on a gateway host.
	GatewayPath
	// Routed: the request belongs to a route.
	Routed
	// NoRoute: a gateway host, but no route covers the path.
	NoRoute
	// BadPath: the path is ambiguous (dot segments, encoded separators, backslashes), so
	// that the gateway and an upstream could resolve it differently.
	BadPath
)

// Table finds the route of a request by authority and path. The filter, the local gateway
// and the manifest renderer share it, so they agree on which route a request belongs to.
type Table struct {
	routes []Route
	byHost map[string][]int // indexes into routes, longest path prefix first
	scheme map[string]string
}

// NewTable indexes routes.
func NewTable(routes []Route) *Table {
	t := &Table{routes: routes, byHost: map[string][]int{}, scheme: map[string]string{}}
	for i, r := range routes {
		idx := append(t.byHost[r.Host], i)
		// Longest prefix first; ties keep configuration order.
		for j := len(idx) - 1; j > 0 && len(routes[idx[j]].PathPrefix) > len(routes[idx[j-1]].PathPrefix); j-- {
			idx[j], idx[j-1] = idx[j-1], idx[j]
		}
		t.byHost[r.Host] = idx
		t.scheme[r.Host] = r.Scheme
	}
	return t
}

// Match resolves an authority and a raw :path (query included). The index is that of the
// matched route in the slice given to NewTable, or -1.
func (t *Table) Match(authority, rawPath string) (int, Match) {
	idx := t.byHost[t.normalizeAuthority(authority)]
	if idx == nil {
		return -1, ForeignHost
	}
	path := rawPath
	if i := strings.IndexAny(path, "?#"); i >= 0 {
		path = path[:i]
	}
	if !SafePath(path) {
		return -1, BadPath
	}
	if paths.IsGateway(path) {
		return -1, GatewayPath
	}
	for _, i := range idx {
		if PrefixMatches(t.routes[i].PathPrefix, path) {
			return i, Routed
		}
	}
	return -1, NoRoute
}

// IsGatewayHost reports whether authority is the host of some route.
func (t *Table) IsGatewayHost(authority string) bool {
	return t.byHost[t.normalizeAuthority(authority)] != nil
}

// PrefixMatches reports whether path is under prefix on a segment boundary.
func PrefixMatches(prefix, path string) bool {
	if prefix == "/" {
		return true
	}
	return strings.HasPrefix(path, prefix) && (len(path) == len(prefix) || path[len(prefix)] == '/')
}

// SafePath refuses paths that different parsers could resolve differently: dot segments,
// percent-encoded dots, slashes, backslashes or NUL, backslashes, empty segments and
// control bytes.
func SafePath(p string) bool {
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
// the port when it is the default of the scheme that host's routes use.
func (t *Table) normalizeAuthority(a string) string {
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
	if s, ok := t.scheme[host]; ok && ((port == "443" && s == "https") || (port == "80" && s == "http")) {
		return host
	}
	return full
}

// Route returns the route at index i of the table.
func (t *Table) Route(i int) Route { return t.routes[i] }
