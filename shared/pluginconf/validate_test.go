package pluginconf

import (
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	route := func(id, host string) Route {
		return Route{ID: id, Host: host, Scheme: "https", PathPrefix: "/", Kind: KindServer}
	}
	base := func(routes ...Route) Config {
		return Config{Cluster: "tokensvc", Authority: "tokensvc.internal", FilterKey: "k", CheckTimeoutMillis: 1000, Routes: routes}
	}
	for _, tc := range []struct {
		name string
		cfg  Config
		want string // "" for valid
	}{
		{"two routes", base(route("https://a.example/", "a.example"), route("https://b.example/", "b.example")), ""},
		{"no routes", base(), ""},
		{"route without id", base(route("", "a.example")), "routes[0].id is required"},
		// A hand-written configuration: the gateway's own generator refuses duplicate routes
		// before it writes one.
		{"duplicate id", base(route("https://a.example/", "a.example"), route("https://b.example/", "b.example"), route("https://a.example/", "c.example")),
			`routes[2].id "https://a.example/" is also routes[0].id; route IDs must be unique`},
		{"no cluster", Config{Authority: "x", FilterKey: "k", CheckTimeoutMillis: 1}, "token_service_cluster is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Validate = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
