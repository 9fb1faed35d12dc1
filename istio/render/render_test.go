package render

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpmesh/gateway/shared/config"
)

// Secrets of the example, given through the environment as the operator's commands do.
var exampleEnv = map[string]string{
	"SHARED_SECRET":     "ZXhhbXBsZS1zaGFyZWQtc2VjcmV0LTMyLWJ5dGVzISE=",
	"COOKIE_SECRET":     "ZXhhbXBsZS1jb29raWUtc2VjcmV0LTMyLWJ5dGVzISE=",
	"IDP_CLIENT_SECRET": "example-idp-client-secret-value",
}

// exampleDigest stands for the module image's manifest digest in the examples.
const exampleDigest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func lookup(m map[string]string) config.LookupEnv {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func readExample(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "examples", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// renderConfig renders raw with the example's secrets and returns the files by name.
func renderConfig(t *testing.T, raw []byte, o Options) map[string][]byte {
	t.Helper()
	files, err := renderFiles(raw, o)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func renderFiles(raw []byte, o Options) (map[string][]byte, error) {
	cfg, err := config.Parse(raw, lookup(exampleEnv))
	if err != nil {
		return nil, err
	}
	if o.ModuleDigest == "" {
		o.ModuleDigest = exampleDigest
	}
	fs, err := Render(cfg, raw, o)
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for _, f := range fs {
		out[f.Name] = f.Data
	}
	return out, nil
}

func renderExample(t *testing.T, o Options) map[string][]byte {
	return renderConfig(t, readExample(t, "gateway.yaml"), o)
}

// variants are the placements and routing flavours the tests render.
var variants = map[string]struct {
	config string
	o      Options
}{
	"ingress-istio":       {"gateway.yaml", Options{}},
	"ingress-gateway-api": {"gateway.yaml", Options{Routing: RoutingGatewayAPI, Gateway: "istio-ingress/mcp-gateway"}},
	"waypoint":            {"waypoint/gateway.yaml", Options{Placement: PlacementWaypoint, Routing: RoutingGatewayAPI, WorkloadNamespace: "mcp-servers"}},
	"sidecar":             {"waypoint/gateway.yaml", Options{Placement: PlacementSidecar, WorkloadNamespace: "mcp-servers", WorkloadSelector: map[string]string{"app.kubernetes.io/part-of": "mcp-servers"}}},
}

// TestRender_EveryObjectDecodesStrictly decodes every rendered object into the real API types
// (unknown fields are errors) and the Envoy bootstrap into go-control-plane, passing
// ValidateAll.
func TestRender_EveryObjectDecodesStrictly(t *testing.T) {
	t.Parallel()
	for name, v := range variants {
		t.Run(name, func(t *testing.T) {
			files := renderConfig(t, readExample(t, v.config), v.o)
			var kinds []string
			for _, f := range []string{FileWasmPlugin, FileTokenService, FileRouting, FileAuthz} {
				for _, d := range decodeAll(t, files[f]) {
					kinds = append(kinds, d.Kind)
				}
			}
			for _, want := range []string{"WasmPlugin", "ServiceAccount", "ConfigMap", "Deployment", "Service", "AuthorizationPolicy"} {
				if !slices.Contains(kinds, want) {
					t.Errorf("no %s rendered (got %v)", want, kinds)
				}
			}
			route := "VirtualService"
			if v.o.Routing == RoutingGatewayAPI {
				route = "HTTPRoute"
			}
			if !slices.Contains(kinds, route) {
				t.Errorf("no %s rendered (got %v)", route, kinds)
			}
			if _, err := decodeEnvoy(files[FileEnvoy]); err != nil {
				t.Fatalf("envoy.yaml: %v", err)
			}
		})
	}
}

// TestRender_IsDeterministicAndHoldsNoSecret: the same input gives the same bytes, and no
// secret value appears in any file.
func TestRender_IsDeterministicAndHoldsNoSecret(t *testing.T) {
	t.Parallel()
	raw := readExample(t, "gateway.yaml")
	a := renderConfig(t, raw, Options{})
	for range 3 {
		b := renderConfig(t, raw, Options{})
		for name := range a {
			if !bytes.Equal(a[name], b[name]) {
				t.Fatalf("%s differs between two renderings", name)
			}
		}
	}
	for name, data := range a {
		for k, v := range exampleEnv {
			if bytes.Contains(data, []byte(v)) {
				t.Errorf("%s holds the value of %s", name, k)
			}
		}
	}
}

// TestRender_RefusesWhatItCannotRender: each message names the key.
func TestRender_RefusesWhatItCannotRender(t *testing.T) {
	t.Parallel()
	raw := string(readExample(t, "gateway.yaml"))
	for _, tc := range []struct {
		name     string
		from, to string
		o        Options
		want     string
	}{
		{"not an outbound cluster", "cluster: outbound|8481||mcp-gateway-tokensvc.mcp-gateway.svc.cluster.local", "cluster: gateway-tokensvc", Options{}, "render: token_service.cluster: in Istio"},
		{"loopback listener", "address: 0.0.0.0:8480", "address: 127.0.0.1:8480", Options{}, "render: token_service.address: in a pod"},
		{"port mismatch", "internal_address: 0.0.0.0:8481", "internal_address: 0.0.0.0:9000", Options{}, "render: token_service.internal_address: port 9000 differs"},
		{"authority", "authority: mcp-gateway-tokensvc.mcp-gateway.svc.cluster.local", "authority: other", Options{}, "render: token_service.authority:"},
		{"unknown secret", "idp_client_id: mcp-gateway", "idp_client_id: mcp-gateway\nidp_request_params: {client_password: hunter2}", Options{}, "render: idp_request_params.client_password: holds a secret"},
		{"bad digest", "", "", Options{ModuleDigest: "sha256:abc"}, "render: -module-digest:"},
		{"waypoint without gateway api", "", "", Options{Placement: PlacementWaypoint, WorkloadNamespace: "x"}, "render: -routing:"},
		{"waypoint host not a service", "", "", Options{Placement: PlacementWaypoint, Routing: RoutingGatewayAPI, WorkloadNamespace: "mcp-servers"}, "render: routes: with -placement waypoint"},
		{"external upstream with gateway api", "to: http://tools.mcp-servers.svc.cluster.local:8080/mcp", "to: https://tools.example.net/mcp", Options{Routing: RoutingGatewayAPI}, "render: routes[0].to:"},
	} {
		_, err := renderFiles([]byte(strings.Replace(raw, tc.from, tc.to, 1)), tc.o)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want prefix %q", tc.name, err, tc.want)
		}
	}
}
