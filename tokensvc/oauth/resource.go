package oauth

import (
	"net/url"
	"strings"

	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/tokensvc/hosts"
)

// Resource indicators (RFC 8707) name MCP server routes the way the data path does
// (docs/architecture.md, rule 12; docs/clients.md "Resource indicators"):
//
//   - A resource equal to a route's normalised from, or beneath it on a segment boundary,
//     names that route; of several routes of the host the longest path prefix wins, as in
//     the filter's route match. Clients send the MCP URL they were given, which may be deeper
//     than the route's from (a route from https://mcp.example.com serves
//     https://mcp.example.com/mcp).
//   - Scheme and host are compared case-insensitively, a trailing dot of the host and the
//     scheme's default port are dropped, and one trailing slash of the path is ignored. The
//     path is compared exactly (case included), as the route match does.
//   - The route that covers the resource must be an mcp.server route: a path served by a
//     plain or mcp.client route is no MCP server.
//   - The bare origin (https://mcp.example.com, with or without "/") names the route whose
//     from is that origin when there is one; when no route of the host has the bare origin as
//     its from, it means every mcp.server route of the host (the resource of the host-level
//     protected resource metadata). A token for it is then valid at each of them.
//   - Refused with invalid_target: another scheme, host or port; userinfo, a query or a
//     fragment; percent-escapes, path parameters (";"), dot segments, empty segments,
//     backslashes, whitespace or control characters (the filter refuses such paths as
//     ambiguous, or an upstream may read them as another route's); and, in one request, several values that do not all name the same
//     route.
//
// The resolved value is what codes, grants and tokens store: the route's normalised from
// (config.Route.Normalized().ID), or the host's origin for "every route of the host".

// maxResourceLen bounds a resource indicator.
const maxResourceLen = 2000

// resourceProblem says why a resource indicator names nothing this host serves. Descriptions
// never echo the value.
type resourceProblem string

const (
	resourceOK          resourceProblem = ""
	resourceMalformed   resourceProblem = "resource must be an absolute https (or loopback http) URL without user information, query, fragment, escapes or dot segments"
	resourceOtherHost   resourceProblem = "resource is not on this host: a token is requested where the MCP server is, at its own authorization server"
	resourceNotServer   resourceProblem = "resource is not an MCP server of this host"
	resourceNotOneRoute resourceProblem = "the resource values name different MCP servers; request one at a time"
)

// parsedResource is a syntactically valid resource indicator, normalised.
type parsedResource struct {
	scheme    string // "https" or "http"
	authority string // hosts.Normalize(host, scheme)
	path      string // "/" or a path without a trailing slash
}

// parseResource checks the syntax of a resource indicator and normalises it. It never
// resolves names nor connects anywhere.
func parseResource(raw string) (parsedResource, resourceProblem) {
	if raw == "" || len(raw) > maxResourceLen {
		return parsedResource{}, resourceMalformed
	}
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; {
		case c <= 0x20 || c >= 0x7f, c == '\\', c == '%', c == '#', c == '?', c == ';':
			return parsedResource{}, resourceMalformed
		}
	}
	u, err := url.Parse(raw)
	if err != nil || u.Opaque != "" || u.User != nil || u.Host == "" || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return parsedResource{}, resourceMalformed
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return parsedResource{}, resourceMalformed
	}
	if strings.Contains(u.Host, "@") || u.Hostname() == "" {
		return parsedResource{}, resourceMalformed
	}
	p := u.Path
	if p == "" {
		p = "/"
	}
	if p[0] != '/' || strings.Contains(p, "//") {
		return parsedResource{}, resourceMalformed
	}
	if len(p) > 1 {
		p = strings.TrimSuffix(p, "/")
	}
	for _, seg := range strings.Split(p[1:], "/") {
		if seg == "." || seg == ".." {
			return parsedResource{}, resourceMalformed
		}
	}
	return parsedResource{scheme: u.Scheme, authority: hosts.Normalize(u.Host, u.Scheme), path: p}, resourceOK
}

// resolveResource resolves one resource indicator on host h to what a grant is bound to:
// the ID of the mcp.server route that serves it, or h.Origin for every mcp.server route of
// h (see the rules above).
func resolveResource(h *hosts.Host, raw string) (string, resourceProblem) {
	pr, problem := parseResource(raw)
	if problem != resourceOK {
		return "", problem
	}
	if pr.scheme+"://"+pr.authority != h.Origin {
		return "", resourceOtherHost
	}
	rt, ok := routeServing(h, pr.path)
	if !ok {
		if pr.path == "/" && len(h.ServerRoutes()) > 0 {
			return h.Origin, resourceOK
		}
		return "", resourceNotServer
	}
	if rt.RouteKind() != "server" {
		return "", resourceNotServer
	}
	return rt.Normalized().ID, resourceOK
}

// resolveResources resolves the resource values of one request; they must all name the same
// route. It returns "" without error when there are none.
func resolveResources(h *hosts.Host, raws []string) (string, *oauthError) {
	resolved := ""
	for i, raw := range raws {
		id, problem := resolveResource(h, raw)
		if problem != resourceOK {
			return "", newError(errInvalidTarget, string(problem))
		}
		if i > 0 && id != resolved {
			return "", newError(errInvalidTarget, string(resourceNotOneRoute))
		}
		resolved = id
	}
	return resolved, nil
}

// routeServing returns the route of h (of any kind) that serves path, the longest path
// prefix winning, as the filter's route match decides. A path that another route would
// match once case is ignored is refused (no route): an upstream that ignores case could
// serve it as that route.
func routeServing(h *hosts.Host, path string) (*config.Route, bool) {
	var best, bestFold *config.Route
	for _, rt := range h.Routes {
		p := rt.Normalized().PathPrefix
		if prefixCovers(p, path) && (best == nil || len(p) > len(best.Normalized().PathPrefix)) {
			best = rt
		}
		if prefixCovers(strings.ToLower(p), strings.ToLower(path)) && (bestFold == nil || len(p) > len(bestFold.Normalized().PathPrefix)) {
			bestFold = rt
		}
	}
	if best == nil || best != bestFold {
		return nil, false
	}
	return best, true
}

// prefixCovers reports whether path is prefix or beneath it on a segment boundary.
func prefixCovers(prefix, path string) bool {
	if prefix == "/" {
		return true
	}
	return strings.HasPrefix(path, prefix) && (len(path) == len(prefix) || path[len(prefix)] == '/')
}

// hostServes reports whether an already resolved resource (a route ID or an origin) belongs
// to h: codes and grants bound to a resource are redeemable only at its issuer.
func hostServes(h *hosts.Host, resource string) bool {
	if resource == h.Origin {
		return true
	}
	_, ok := serverRoute(h, resource)
	return ok
}

// tokenValidAt reports whether a token bound to resource (a resolved resource, or "" for an
// unbound token) may be used at the mcp.server route routeID. A route ID must be equal; an
// origin covers every route of that host, unless a route's from is that bare origin, which
// it then names alone.
func (s *Server) tokenValidAt(resource, routeID string) bool {
	switch {
	case resource == "", resource == routeID:
		return true
	case resource != originOf(routeID):
		return false
	}
	for i := range s.cfg.Routes {
		if s.cfg.Routes[i].Normalized().ID == resource {
			return false // the origin is a route of its own, and routeID is not that route
		}
	}
	return true
}
