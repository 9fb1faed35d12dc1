package render

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// heavyDeps are the modules only the renderer's tests (and the OCI builder) may import.
var heavyDeps = []string{"istio.io/", "k8s.io/", "sigs.k8s.io/", "github.com/envoyproxy/", "github.com/google/go-containerregistry", "github.com/cncf/xds"}

// TestDeps_DataPathImportsNoMeshAPIs: the filter's wasip1 build, the token service, the local
// gateway and the renderer itself import none of the Kubernetes, Istio, Gateway API, Envoy or
// registry modules the tests of this package use.
func TestDeps_DataPathImportsNoMeshAPIs(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		pkg  string
		goos string
	}{
		{"./filter", "wasip1"},
		{"./tokensvc/cmd/tokensvc", ""},
		{"./wasmtest/cmd/localgateway", ""},
		{"./istio/cmd/render", ""},
	} {
		cmd := exec.Command("go", "list", "-deps", tc.pkg)
		cmd.Dir = root
		cmd.Env = os.Environ()
		if tc.goos != "" {
			cmd.Env = append(cmd.Env, "GOOS="+tc.goos, "GOARCH=wasm")
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", tc.pkg, err, out)
		}
		deps := strings.Fields(string(out))
		if len(deps) < 10 {
			t.Fatalf("go list -deps %s listed only %v", tc.pkg, deps)
		}
		for _, d := range deps {
			for _, h := range heavyDeps {
				if strings.HasPrefix(d, h) {
					t.Errorf("%s imports %s", tc.pkg, d)
				}
			}
		}
	}
}
