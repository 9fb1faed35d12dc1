package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var env = map[string]string{
	"SHARED_SECRET":     "ZXhhbXBsZS1zaGFyZWQtc2VjcmV0LTMyLWJ5dGVzISE=",
	"COOKIE_SECRET":     "ZXhhbXBsZS1jb29raWUtc2VjcmV0LTMyLWJ5dGVzISE=",
	"IDP_CLIENT_SECRET": "example-idp-client-secret-value",
}

func lookup(k string) (string, bool) { v, ok := env[k]; return v, ok }

func noEnv(string) (string, bool) { return "", false }

const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestRun_WritesEveryFile(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-config", "../../examples/gateway.yaml", "-o", out, "-module-digest", digest}, lookup, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, f := range []string{"wasmplugin.yaml", "tokensvc.yaml", "routing.yaml", "authorizationpolicy.yaml", "envoy.yaml", "kustomization.yaml", "SECRETS.md"} {
		b, err := os.ReadFile(filepath.Join(out, f))
		if err != nil || len(b) == 0 {
			t.Errorf("%s: %v", f, err)
		}
		if !strings.Contains(stdout.String(), filepath.Join(out, f)) {
			t.Errorf("stdout does not list %s", f)
		}
	}
	// The files equal istio/base, the rendering the repository carries.
	for _, f := range []string{"wasmplugin.yaml", "tokensvc.yaml", "routing.yaml"} {
		got, _ := os.ReadFile(filepath.Join(out, f))
		want, _ := os.ReadFile(filepath.Join("..", "..", "base", f))
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from istio/base/%s", f, f)
		}
	}
}

func TestRun_ModuleLayoutGivesTheDigest(t *testing.T) {
	t.Parallel()
	layout, out := t.TempDir(), t.TempDir()
	index := `{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"` + digest + `","size":1}]}`
	if err := os.WriteFile(filepath.Join(layout, "index.json"), []byte(index), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-config", "../../examples/gateway.yaml", "-o", out, "-module-layout", layout}, lookup, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	b, _ := os.ReadFile(filepath.Join(out, "wasmplugin.yaml"))
	if !strings.Contains(string(b), "@"+digest) {
		t.Errorf("the WasmPlugin is not pinned to the layout's digest:\n%s", b)
	}
}

func TestRun_RefusalsExit2NamingTheKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		env  func(string) (string, bool)
		want string
	}{
		{"quick start is not an Istio config", []string{"-config", "../../../examples/gateway.yaml", "-module-digest", digest}, noEnv, "render: token_service.cluster: "},
		{"secrets missing", []string{"-config", "../../examples/gateway.yaml", "-module-digest", digest}, noEnv, "config: shared_secret: is required"},
		{"no digest", []string{"-config", "../../examples/gateway.yaml"}, lookup, "render: -module-digest: "},
		{"bad placement", []string{"-config", "../../examples/gateway.yaml", "-module-digest", digest, "-placement", "moon"}, lookup, "render: -placement: "},
		{"missing layout", []string{"-config", "../../examples/gateway.yaml", "-module-layout", "/nonexistent"}, lookup, "render: -module-layout: "},
		{"no config", []string{}, lookup, "render: -config and -o are required"},
		{"bad selector", []string{"-config", "../../examples/gateway.yaml", "-ingress-selector", "novalue"}, lookup, "want key=value"},
	} {
		out := t.TempDir()
		var stdout, stderr bytes.Buffer
		args := append([]string{"-o", out}, tc.args...)
		if tc.name == "no config" {
			args = nil
		}
		if code := run(args, tc.env, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%s: exit %d, stderr %q, want 2 and %q", tc.name, code, stderr.String(), tc.want)
		}
		if entries, _ := os.ReadDir(out); len(entries) != 0 {
			t.Errorf("%s: files were written", tc.name)
		}
	}
}

func TestRun_EnvoyOnly(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-config", "../../examples/gateway.yaml", "-o", out, "-envoy-only"}, lookup, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	got, _ := os.ReadFile(filepath.Join(out, "envoy.yaml"))
	want, _ := os.ReadFile(filepath.Join("..", "..", "render", "testdata", "golden", "example-envoy.yaml"))
	if !bytes.Equal(got, want) {
		t.Error("envoy.yaml differs from the golden example bootstrap")
	}
	if entries, _ := os.ReadDir(out); len(entries) != 1 {
		t.Errorf("-envoy-only wrote %d files", len(entries))
	}
	// The quick start (not an Istio configuration) renders for Envoy too.
	out = t.TempDir()
	if code := run([]string{"-config", "../../../examples/gateway.yaml", "-o", out, "-envoy-only"}, noEnv, &stdout, &stderr); code != 0 {
		t.Fatalf("quick start: exit %d: %s", code, stderr.String())
	}
}
