package render

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"

	"github.com/mcpmesh/gateway/wasmtest/wasmbuild"
)

// TestModuleImports_AreDocumented keeps docs/filter.md's list of what the module imports from
// the host (the Envoy and Istio releases that run it depend on it, docs/envoy.md) equal to
// the imports of the built filter.wasm.
func TestModuleImports_AreDocumented(t *testing.T) {
	ctx := context.Background()
	r := wazero.NewRuntime(ctx)
	defer r.Close(ctx)
	cm, err := r.CompileModule(ctx, wasmbuild.Filter(t))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range cm.ImportedFunctions() {
		m, n, _ := f.Import()
		if s := m + "." + n; !slices.Contains(got, s) {
			got = append(got, s)
		}
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "filter.md"))
	if err != nil {
		t.Fatal(err)
	}
	const heading = "## What the module imports from the host"
	_, section, ok := strings.Cut(string(doc), heading)
	if !ok {
		t.Fatalf("docs/filter.md has no %q section", heading)
	}
	if i := strings.Index(section, "\n## "); i >= 0 {
		section = section[:i]
	}
	var documented []string
	for _, m := range regexp.MustCompile("`((?:env|wasi_snapshot_preview1)\\.[a-z0-9_]+)`").FindAllStringSubmatch(section, -1) {
		if !slices.Contains(documented, m[1]) {
			documented = append(documented, m[1])
		}
	}
	for _, s := range got {
		if !slices.Contains(documented, s) {
			t.Errorf("filter.wasm imports %s; add it to docs/filter.md (%s) with what it needs from the host", s, heading)
		}
	}
	for _, s := range documented {
		if !slices.Contains(got, s) {
			t.Errorf("docs/filter.md lists %s, which filter.wasm no longer imports", s)
		}
	}
	if len(got) < 20 {
		t.Fatalf("only %d imports read: %v", len(got), got)
	}
}
