package render

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/shared/golden"
)

// checkDir compares the rendered files (envoy.yaml aside) with those in dir, or with -update
// (shared/golden's flag) rewrites them. istio/base and istio/examples/waypoint are such
// renderings: what an operator reads there is what the renderer writes.
func checkDir(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	update := flag.Lookup("update").Value.String() == "true"
	for name, got := range files {
		if name == FileEnvoy {
			continue
		}
		p := filepath.Join(dir, name)
		if update {
			if err := os.WriteFile(p, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("%v (go test ./istio/render -update writes it)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from the rendering of its configuration; check the change, then rewrite it with go test ./istio/render -update", p)
		}
	}
}

// golden is referenced so that its -update flag is registered in this test binary.
var _ = golden.Check

func TestGolden_BaseIsTheExampleRendered(t *testing.T) {
	checkDir(t, filepath.Join("..", "base"), renderExample(t, Options{}))
}

func TestGolden_WaypointExample(t *testing.T) {
	v := variants["waypoint"]
	checkDir(t, filepath.Join("..", "examples", "waypoint"), renderConfig(t, readExample(t, v.config), v.o))
}

// TestGolden_ExampleEnvoyBootstrap: the example configuration as a plain Envoy bootstrap
// (render -envoy-only).
func TestGolden_ExampleEnvoyBootstrap(t *testing.T) {
	golden.Check(t, "example-envoy.yaml", renderExample(t, Options{})[FileEnvoy])
}

// TestEnvoy_QuickStartRenders: the quick start's configuration (make run) renders as a
// bootstrap that decodes and validates, with its listeners (one per host) and the token service at
// the addresses make run starts it on. (Not a golden file: the quick start changes often.)
func TestEnvoy_QuickStartRenders(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "examples", "gateway.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.ParseDir(raw, nil, filepath.Join("..", "..", "examples"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := RenderEnvoy(cfg, EnvoyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bs, err := decodeEnvoy(b)
	if err != nil {
		t.Fatal(err)
	}
	var ports []uint32
	for _, l := range bs.GetStaticResources().GetListeners() {
		ports = append(ports, l.GetAddress().GetSocketAddress().GetPortValue())
	}
	if !slices.Equal(ports, []uint32{8400, 8401, 8402, 8412, 8414}) { // authenticate, MCP, app, upstream-OAuth MCP, upstream-discovery MCP
		t.Errorf("listener ports %v", ports)
	}
	endpoints := map[string]string{}
	for _, c := range bs.GetStaticResources().GetClusters() {
		sa := c.GetLoadAssignment().GetEndpoints()[0].GetLbEndpoints()[0].GetEndpoint().GetAddress().GetSocketAddress()
		endpoints[c.GetName()] = sa.GetAddress() + ":" + strconv.Itoa(int(sa.GetPortValue()))
	}
	if endpoints[cfg.TokenService.Cluster] != cfg.TokenService.InternalAddress || endpoints[envoyPublicCluster] != cfg.TokenService.Address {
		t.Errorf("token service clusters %v", endpoints)
	}
}

// TestRender_AChangeChangesTheOutputPredictably pins which files each kind of edit changes.
func TestRender_AChangeChangesTheOutputPredictably(t *testing.T) {
	t.Parallel()
	raw := string(readExample(t, "gateway.yaml"))
	base := renderExample(t, Options{})
	for _, tc := range []struct {
		name     string
		from, to string
		o        Options
		changed  []string
		contains map[string]string
	}{
		{
			name: "policy", from: "starts_with: delete_", to: "starts_with: drop_",
			changed:  []string{FileEnvoy, FileTokenService, FileWasmPlugin},
			contains: map[string]string{FileWasmPlugin: "starts_with: drop_", FileTokenService: "starts_with: drop_"},
		},
		{
			name: "new route host", from: "routes:\n", to: "routes:\n  - from: https://docs.example.com/mcp\n    to: http://docs.apps.svc.cluster.local:8080/mcp\n    mcp: {server: {}}\n",
			changed:  []string{FileEnvoy, FileRouting, FileTokenService, FileWasmPlugin},
			contains: map[string]string{FileRouting: "name: mcp-gateway-docs-example-com", FileWasmPlugin: "host: docs.example.com"},
		},
		{
			name: "public port", from: "address: 0.0.0.0:8480", to: "address: 0.0.0.0:9480",
			changed:  []string{FileEnvoy, FileRouting, FileTokenService},
			contains: map[string]string{FileRouting: "number: 9480", FileTokenService: "containerPort: 9480"},
		},
		{
			name: "internal port", from: "8481", to: "9481",
			changed: []string{FileAuthz, FileEnvoy, FileSecrets, FileTokenService, FileWasmPlugin},
		},
		{
			name: "module digest", o: Options{ModuleDigest: "sha256:" + strings.Repeat("f", 64)},
			changed:  []string{FileWasmPlugin},
			contains: map[string]string{FileWasmPlugin: "sha256: " + strings.Repeat("f", 64)},
		},
		{
			name: "sqlite", from: "  type: postgres\n  dsn: postgres://gateway@postgres.mcp-gateway.svc.cluster.local:5432/gateway?sslmode=require\n", to: "  type: sqlite\n  path: build/gw.db\n",
			changed:  []string{FileTokenService},
			contains: map[string]string{FileTokenService: "path: /var/lib/mcp-gateway/gw.db"},
		},
		{
			name: "postgres password", from: "postgres://gateway@", to: "postgres://gateway:hunter2@",
			changed:  []string{FileSecrets, FileTokenService},
			contains: map[string]string{FileSecrets: "`storage-password` | environment `PGPASSWORD`", FileTokenService: "name: PGPASSWORD"},
		},
	} {
		got := renderConfig(t, []byte(strings.ReplaceAll(raw, tc.from, tc.to)), tc.o)
		var changed []string
		for name := range base {
			if !bytes.Equal(base[name], got[name]) {
				changed = append(changed, name)
			}
		}
		sort.Strings(changed)
		want := slices.Clone(tc.changed)
		sort.Strings(want)
		if !slices.Equal(changed, want) {
			t.Errorf("%s: changed %v, want %v", tc.name, changed, want)
		}
		for f, s := range tc.contains {
			if !strings.Contains(string(got[f]), s) {
				t.Errorf("%s: %s does not contain %q", tc.name, f, s)
			}
		}
		if strings.Contains(string(bytes.Join(mapValues(got), nil)), "hunter2") {
			t.Errorf("%s: a password reached a rendered file", tc.name)
		}
	}
}

func mapValues(m map[string][]byte) [][]byte {
	var out [][]byte
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
