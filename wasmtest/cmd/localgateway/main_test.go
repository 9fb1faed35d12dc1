package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRun_BadConfigExits2NamingTheKey(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("runtime_flags: {mcp: true}\nroutes:\n  - from: https://x.example.com\n    to: http://u\n    mcp: {server: {bogus: 1}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile("../../../examples/gateway.yaml")
	if err != nil {
		t.Fatal(err)
	}
	exampleCopy := filepath.Join(dir, "gateway.yaml")
	if err := os.WriteFile(exampleCopy, example, 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		want string
	}{
		{nil, "-config is required"},
		{[]string{"-config", bad}, "routes[0].mcp.server.bogus: unknown key"},
		{[]string{"-config", filepath.Join(dir, "missing.yaml")}, "missing.yaml"},
		{[]string{"-config", "../../../examples/gateway.yaml", "-log-format", "xml"}, "-log-format must be text or json"},
		{[]string{"-config", "../../../examples/gateway.yaml", "-wasm-log-level", "verbose"}, "-wasm-log-level must be trace, debug, info, warn or error"},
		// The example's certificate is made by the quick start; a copy of the example elsewhere
		// names files (relative to its folder) that do not exist.
		{[]string{"-config", exampleCopy}, "certificate_file, certificate_key_file: open " + filepath.Join(filepath.Dir(dir), "build", "out", "tls", "cert.pem")},
	}
	for _, c := range cases {
		var stderr bytes.Buffer
		if code := run(c.args, &stderr); code != 2 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("run(%v) = %d, stderr %q; want 2 and %q", c.args, code, stderr.String(), c.want)
		}
	}
}
