package plugin

import "github.com/mcpmesh/gateway/shared/pluginconf"

// RouteStatPrefix is routeStatPrefix for the tests of package plugin_test.
func RouteStatPrefix(name, host, path string) string {
	return routeStatPrefix(&pluginconf.Route{Name: name, Host: host, PathPrefix: path})
}
