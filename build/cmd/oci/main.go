// Command oci writes the project's images as OCI image layouts, without a container engine
// (build/oci): the Wasm module as a Wasm OCI artifact and as a Docker-compatible image with
// plugin.wasm, and the token service's image. `make oci` runs it; push a layout with
// `crane push DIR REGISTRY/REPO:TAG` (docs/istio.md).
//
// Usage:
//
//	oci -wasm build/out/filter.wasm -tokensvc build/out/linux_amd64/tokensvc -out build/out/oci
//
// Timestamps come from SOURCE_DATE_EPOCH (seconds; default 0), so the same inputs give the
// same digests. It prints one line per image: name, manifest digest, layout directory.
package main

import (
	"debug/elf"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/mcpmesh/gateway/build/oci"
)

// Layout directories under -out.
const (
	DirArtifact = "filter-artifact"
	DirDocker   = "filter-docker"
	DirTokenSvc = "tokensvc"
)

func main() {
	os.Exit(run(os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

func run(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("oci", flag.ContinueOnError)
	fs.SetOutput(stderr)
	wasmPath := fs.String("wasm", "build/out/filter.wasm", "the module (make wasm)")
	tsPath := fs.String("tokensvc", "", "the token service, a static linux binary (CGO_ENABLED=0); empty skips its image")
	caPath := fs.String("ca", "/etc/ssl/certs/ca-certificates.crt", "CA bundle for the token service image (Debian's ca-certificates)")
	arch := fs.String("arch", runtime.GOARCH, "architecture of the token service binary")
	out := fs.String("out", "build/out/oci", "output `directory` for the layouts")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	epoch := time.Unix(0, 0).UTC()
	if s := getenv("SOURCE_DATE_EPOCH"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			fmt.Fprintf(stderr, "oci: SOURCE_DATE_EPOCH: want seconds since 1970, got %q\n", s)
			return 2
		}
		epoch = time.Unix(n, 0).UTC()
	}
	module, err := os.ReadFile(*wasmPath)
	if err != nil {
		fmt.Fprintf(stderr, "oci: -wasm: %v\n", err)
		return 2
	}
	type job struct {
		name, dir string
		img       func() (v1.Image, error)
	}
	jobs := []job{
		{"filter (Wasm OCI artifact)", DirArtifact, func() (v1.Image, error) { return oci.WasmArtifact(module) }},
		{"filter (Docker-compatible, plugin.wasm)", DirDocker, func() (v1.Image, error) { return oci.DockerWasmImage(module, epoch) }},
	}
	if *tsPath != "" {
		bin, err := os.ReadFile(*tsPath)
		if err != nil {
			fmt.Fprintf(stderr, "oci: -tokensvc: %v\n", err)
			return 2
		}
		if err := checkStatic(*tsPath, *arch); err != nil {
			fmt.Fprintf(stderr, "oci: -tokensvc: %v\n", err)
			return 2
		}
		ca, err := os.ReadFile(*caPath)
		if err != nil {
			fmt.Fprintf(stderr, "oci: -ca: %v (install Debian's ca-certificates)\n", err)
			return 2
		}
		jobs = append(jobs, job{"token service", DirTokenSvc, func() (v1.Image, error) { return oci.TokenServiceImage(bin, ca, *arch, epoch) }})
	}
	for _, j := range jobs {
		img, err := j.img()
		if err != nil {
			fmt.Fprintf(stderr, "oci: %s: %v\n", j.name, err)
			return 1
		}
		dir := filepath.Join(*out, j.dir)
		d, err := oci.WriteLayout(dir, img)
		if err != nil {
			fmt.Fprintf(stderr, "oci: %s: %v\n", j.name, err)
			return 1
		}
		fmt.Fprintf(stdout, "%s\t%s\t%s\n", d, dir, j.name)
	}
	return 0
}

// checkStatic refuses a binary the image could not run: not a linux ELF of arch, or
// dynamically linked (the image has no libc).
func checkStatic(path, arch string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("not an ELF binary: %w", err)
	}
	defer f.Close()
	machines := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	if m, ok := machines[arch]; !ok || f.Machine != m {
		return fmt.Errorf("built for %v, not %s", f.Machine, arch)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return errors.New("dynamically linked: build it with CGO_ENABLED=0")
		}
	}
	return nil
}
