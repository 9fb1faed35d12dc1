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

// Table finds the route of a request by authority and path. The filter and the local gateway
// share it, so they agree on which route a request belongs to.
type Table struct {
	routes []Route
	byHost map[string][]int // indexes into routes, longest path prefix first
	scheme map[string]string
	// names maps the host names (without port) of the routes to their authority, or to ""
	// when routes use that name with several ports.
	names map[string]string
	// loose holds each route's path prefix in the lenient form of loosePath.
	loose []string
	// strict makes a route host name with a port no route uses NoRoute instead of
	// ForeignHost (except for the authenticate authority); see NewTableFor.
	strict       bool
	authenticate string
}

// NewTable indexes routes. A request whose host name is a route's but whose port is none
// of the routes' is ForeignHost (it may be another service, such as the authenticate
// service, on that name); NewTableFor is stricter. A port that is no port number at all
// ("443x") on a route's host name is NoRoute.
func NewTable(routes []Route) *Table {
	t := &Table{routes: routes, byHost: map[string][]int{}, scheme: map[string]string{}, names: map[string]string{}}
	for i, r := range routes {
		// The configuration normalises hosts; the table does again what requests get, so
		// that a route written "mcp.example.com:0443" is not left unprotected under its
		// usual name.
		host := canonicalRouteHost(r.Host, r.Scheme)
		idx := append(t.byHost[host], i)
		// Longest prefix first; ties keep configuration order.
		for j := len(idx) - 1; j > 0 && len(routes[idx[j]].PathPrefix) > len(routes[idx[j-1]].PathPrefix); j-- {
			idx[j], idx[j-1] = idx[j-1], idx[j]
		}
		t.byHost[host] = idx
		t.scheme[host] = r.Scheme
		name, _ := splitHostPort(host)
		if a, ok := t.names[name]; ok && a != host {
			t.names[name] = ""
		} else {
			t.names[name] = host
		}
		t.loose = append(t.loose, loosePath(r.PathPrefix))
	}
	return t
}

// NewTableFor indexes the routes of c and knows its authenticate service. A request whose
// host name is a route's but whose port is none of the routes' (nor the authenticate
// service's) belongs to the routes of that host name, as Istio routes it (it ignores the port
// when matching hosts, and older gateways match "host:*"): it never passes the filter as
// somebody else's. When routes use that host name with several ports, it is NoRoute.
func NewTableFor(c *Config) *Table {
	t := NewTable(c.Routes)
	t.strict = true
	if scheme, host, ok := originHost(c.AuthenticateServiceURL); ok && host != "" {
		t.authenticate = canonicalRouteHost(host, scheme)
	}
	return t
}

// Match resolves an authority and a raw :path (query included). The index is that of the
// matched route in the slice given to NewTable, or -1.
func (t *Table) Match(authority, rawPath string) (int, Match) {
	key, wellFormed := t.normalizeAuthority(authority)
	idx := t.byHost[key]
	if idx == nil {
		name, _ := splitHostPort(key)
		sole, known := t.names[name]
		switch {
		case !known:
			return -1, ForeignHost
		case !wellFormed:
			// A route host with something that is no port ("443x"): never waved through
			// as somebody else's.
			return -1, NoRoute
		case !t.strict || key == t.authenticate:
			return -1, ForeignHost
		case sole == "":
			return -1, NoRoute
		}
		idx = t.byHost[sole]
	}
	path := rawPath
	for i := 0; i < len(path); i++ { // strings.IndexAny(path, "?#") without its set
		if path[i] == '?' || path[i] == '#' {
			path = path[:i]
			break
		}
	}
	if !SafePath(path) {
		return -1, BadPath
	}
	if paths.IsGateway(path) {
		return -1, GatewayPath
	}
	found := -1
	for _, i := range idx {
		if PrefixMatches(t.routes[i].PathPrefix, path) {
			found = i
			break
		}
	}
	// An upstream that decodes percent-escapes, ignores case or drops path parameters could
	// read the path as another route's: refuse rather than apply the wrong policy.
	lp := loosePath(path)
	for _, i := range idx {
		if prefixMatchesFold(t.loose[i], lp) {
			if i != found {
				return -1, BadPath
			}
			break
		}
	}
	if found < 0 {
		return -1, NoRoute
	}
	return found, Routed
}

// IsGatewayHost reports whether authority is the host of some route.
func (t *Table) IsGatewayHost(authority string) bool {
	key, _ := t.normalizeAuthority(authority)
	return t.byHost[key] != nil
}

// PrefixMatches reports whether path is under prefix on a segment boundary.
func PrefixMatches(prefix, path string) bool {
	if prefix == "/" {
		return true
	}
	return strings.HasPrefix(path, prefix) && (len(path) == len(prefix) || path[len(prefix)] == '/')
}

// SafePath refuses paths that different parsers could resolve differently: dot segments
// (also with a path parameter, "..;x", or of dots and spaces only, "..."), segments that are
// only a path parameter (";x"), percent-encoded (or double-encoded) dots, slashes,
// backslashes or NUL, overlong UTF-8 lead bytes, backslashes, empty segments and control
// bytes.
func SafePath(p string) bool {
	if p == "" || p[0] != '/' {
		return p == "*" // OPTIONS * is harmless
	}
	if len(p) > 1 && p[1] == '/' {
		return false
	}
	seg := 1
	for i := 1; i < len(p); i++ {
		c := p[i]
		switch {
		case c < 0x20 || c == 0x7f || c == '\\' || c == 0xc0 || c == 0xc1:
			return false
		case c == '/':
			if !safeSegment(p[seg:i]) || (i+1 < len(p) && p[i+1] == '/') {
				return false
			}
			seg = i + 1
		case c == '%' && i+2 < len(p):
			h := strings.ToLower(p[i+1 : i+3])
			if h == "25" && i+4 < len(p) {
				// Double encoding: %252e is %2e to an upstream that decodes twice.
				h = strings.ToLower(p[i+3 : i+5])
			}
			if h == "2e" || h == "2f" || h == "5c" || h == "00" || h == "c0" || h == "c1" {
				return false
			}
		}
	}
	return safeSegment(p[seg:])
}

// safeSegment reports whether a path segment is safe from dot-segment tricks: once escapes
// are decoded and a path parameter (from ";") dropped, as Tomcat, Jetty or IIS do, it must
// not be empty (unless it was) nor consist of dots and spaces only.
func safeSegment(s string) bool {
	if s == "" {
		return true
	}
	n, dots := 0, true
	for i := 0; i < len(s); i++ {
		b := s[i]
		if b == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			b = unhex(s[i+1])<<4 | unhex(s[i+2])
			i += 2
		}
		if b == ';' {
			break
		}
		n++
		if b != '.' && b != ' ' {
			dots = false
		}
	}
	return n > 0 && !dots
}

// Route returns the route at index i of the table.
func (t *Table) Route(i int) Route { return t.routes[i] }
