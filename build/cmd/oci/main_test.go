package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// staticBinary builds a tiny static linux program for the token service's place.
func staticBinary(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module tiny\n\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "tiny")
	cmd := exec.Command("go", "build", "-o", out, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH, "GOFLAGS=")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	return out
}

func TestRun_WritesReproducibleLayouts(t *testing.T) {
	dir := t.TempDir()
	wasm := filepath.Join(dir, "filter.wasm")
	ca := filepath.Join(dir, "ca.crt")
	_ = os.WriteFile(wasm, append([]byte("\x00asm\x01\x00\x00\x00"), bytes.Repeat([]byte{3}, 100)...), 0o644)
	_ = os.WriteFile(ca, []byte("-----BEGIN CERTIFICATE-----\n"), 0o644)
	bin := staticBinary(t)
	build := func(epoch string) string {
		var stdout, stderr bytes.Buffer
		out := filepath.Join(t.TempDir(), "oci")
		env := func(k string) string {
			if k == "SOURCE_DATE_EPOCH" {
				return epoch
			}
			return ""
		}
		if code := run([]string{"-wasm", wasm, "-tokensvc", bin, "-ca", ca, "-out", out}, env, &stdout, &stderr); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
		for _, d := range []string{DirArtifact, DirDocker, DirTokenSvc} {
			if _, err := os.Stat(filepath.Join(out, d, "index.json")); err != nil {
				t.Errorf("no layout %s: %v", d, err)
			}
		}
		var digests []string
		for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
			digests = append(digests, strings.Fields(line)[0])
		}
		if len(digests) != 3 {
			t.Fatalf("output %q", stdout.String())
		}
		return strings.Join(digests, " ")
	}
	a, b, c := build("1764000000"), build("1764000000"), build("1764000001")
	if a != b {
		t.Errorf("same inputs, different digests:\n%s\n%s", a, b)
	}
	if a == c {
		t.Error("SOURCE_DATE_EPOCH does not reach the images")
	}
}

func TestRun_Refusals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	wasm := filepath.Join(dir, "filter.wasm")
	notELF := filepath.Join(dir, "script")
	_ = os.WriteFile(wasm, []byte("\x00asm\x01\x00\x00\x00"), 0o644)
	_ = os.WriteFile(notELF, []byte("#!/bin/sh\n"), 0o755)
	for _, tc := range []struct {
		args []string
		env  string
		want string
	}{
		{[]string{"-wasm", notELF, "-out", dir}, "", "not a WebAssembly binary"},
		{[]string{"-wasm", wasm, "-tokensvc", notELF, "-out", dir}, "", "oci: -tokensvc: not an ELF binary"},
		{[]string{"-wasm", wasm, "-out", dir}, "yesterday", "oci: SOURCE_DATE_EPOCH"},
		{[]string{"-wasm", filepath.Join(dir, "missing"), "-out", dir}, "", "oci: -wasm:"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(tc.args, func(string) string { return tc.env }, &stdout, &stderr)
		if code == 0 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", tc.args, code, stderr.String(), tc.want)
		}
	}
	if err := checkStatic(staticBinary(t), map[string]string{"amd64": "arm64", "arm64": "amd64"}[runtime.GOARCH]); err == nil {
		t.Error("a binary of another architecture was accepted")
	}
}
