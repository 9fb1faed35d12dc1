package plugin

import (
	"github.com/mcpmesh/gateway/shared/pluginconf"
	"github.com/mcpmesh/gateway/shared/policy"
)

// route is a configured route with its parsed policy.
type route struct {
	pluginconf.Route
	policy *policy.Policy
	// shadow is the parsed policy_shadow, nil when the route has none (shadow.go).
	shadow *policy.Policy
	// changed are the pinned tools whose changed definition this VM saw listed (pins.go).
	changed map[string]bool
	// resourceMetadata is the RFC 9728 URL advertised in WWW-Authenticate.
	resourceMetadata string
	// challenge is challengeParams(resourceMetadata), the auth-params of its 401 challenges.
	challenge string
	// origin is scheme://host.
	origin string
	// stats are the route's own counters (metrics.go).
	stats routeStats
}

// routeTable finds the route of a request: shared/pluginconf matches, routes holds the
// filter's view of each route by the same index.
type routeTable struct {
	table  *pluginconf.Table
	routes []*route
}

func newRouteTable(cfg *pluginconf.Config, routes []*route) routeTable {
	return routeTable{table: pluginconf.NewTableFor(cfg), routes: routes}
}

func (t *routeTable) match(authority, rawPath string) (*route, pluginconf.Match) {
	i, m := t.table.Match(authority, rawPath)
	if m != pluginconf.Routed {
		return nil, m
	}
	return t.routes[i], m
}
