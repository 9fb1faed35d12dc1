package render

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	securityapi "istio.io/api/security/v1beta1"
	sigyaml "sigs.k8s.io/yaml"
)

// kustomization is the part of a kustomization.yaml these examples use, decoded strictly.
type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Resources  []string `json:"resources"`
	Images     []struct {
		Name    string `json:"name"`
		NewName string `json:"newName"`
		NewTag  string `json:"newTag"`
	} `json:"images"`
}

// TestExamples_KustomizationsAndObjectsDecode: every kustomization under istio/ names files
// that exist, and every object they add decodes strictly; the ingress overlay requires mTLS.
func TestExamples_KustomizationsAndObjectsDecode(t *testing.T) {
	t.Parallel()
	strict := false
	for _, dir := range []string{"../base", "../examples/ingress", "../examples/waypoint"} {
		b, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		var k kustomization
		if err := sigyaml.UnmarshalStrict(b, &k); err != nil {
			t.Fatalf("%s/kustomization.yaml: %v", dir, err)
		}
		if k.Kind != "Kustomization" || len(k.Resources) == 0 {
			t.Errorf("%s: %+v", dir, k)
		}
		for _, r := range k.Resources {
			p := filepath.Join(dir, r)
			st, err := os.Stat(p)
			if err != nil {
				t.Errorf("%s names %s: %v", dir, r, err)
				continue
			}
			if st.IsDir() {
				continue
			}
			data, _ := os.ReadFile(p)
			for _, d := range decodeAll(t, data) {
				if pa, ok := d.Obj.(*securityapi.PeerAuthentication); ok && pa.GetMtls().GetMode() == securityapi.PeerAuthentication_MutualTLS_STRICT {
					strict = strings.HasSuffix(dir, "ingress")
				}
			}
		}
	}
	if !strict {
		t.Error("the ingress overlay does not require mutual TLS")
	}
}
