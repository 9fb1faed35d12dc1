package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpmesh/gateway/shared/config"
)

// Every configuration error exits 2, the identity provider's included, with the key named.
func TestRun_ProviderAndStrictnessErrorsExitWithStatus2(t *testing.T) {
	t.Parallel()
	idp := "idp_provider: oidc\nidp_provider_url: http://127.0.0.1:18409\n"
	cases := []struct{ name, yaml, want string }{
		{"azure without tenant", strings.Replace(validConfig, idp, "idp_provider: azure\n", 1), "idp_provider_url: is required for idp_provider \"azure\""},
		{"github with a path", strings.Replace(validConfig, idp, "idp_provider: github\nidp_provider_url: https://ghe.example.com/login\n", 1), "idp_provider_url: for github give the origin"},
		{"yes is not a boolean", strings.Replace(validConfig, "{mcp: true}", "{mcp: yes}", 1), "runtime_flags.mcp: want true or false"},
		{"unknown runtime flag", strings.Replace(validConfig, "{mcp: true}", "{mcp: true, mpc: true}", 1), "runtime_flags.mpc: unknown runtime flag; did you mean \"mcp\"?"},
		{"mistyped provider", strings.Replace(validConfig, "idp_provider: oidc", "idp_provider: octa", 1), "did you mean \"okta\"?"},
	}
	for _, tc := range cases {
		var stderr bytes.Buffer
		if got := run(context.Background(), []string{"-config", writeConfig(t, tc.yaml)}, &stderr); got != 2 {
			t.Errorf("%s: exit %d, want 2; stderr %s", tc.name, got, stderr.String())
		}
		if !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%s: stderr %q, want it to mention %q", tc.name, stderr.String(), tc.want)
		}
	}
}

func TestExitStatus_ConfigErrorFoundAtStartUpIs2(t *testing.T) {
	t.Parallel()
	ce := &config.Error{Problems: []config.Problem{{Key: "idp_provider_url", Message: "is required"}}}
	if got := exitStatus(fmt.Errorf("identity provider: %w", ce)); got != 2 {
		t.Errorf("wrapped config error: %d, want 2", got)
	}
	if got := exitStatus(errors.New("listen: address in use")); got != 1 {
		t.Errorf("other error: %d, want 1", got)
	}
}

// The built binary reports 2 (go run would report 1 for any failure: docs show the binary).
func TestBinary_ConfigErrorExitStatusIs2(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	bin := filepath.Join(t.TempDir(), "tokensvc")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	cfg := writeConfig(t, strings.Replace(validConfig, "idp_provider: oidc\nidp_provider_url: http://127.0.0.1:18409\n", "idp_provider: azure\n", 1))
	cmd := exec.Command(bin, "-config", cfg)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "idp_provider_url") {
		t.Fatalf("exit %v, output %s", err, out)
	}
}
