// Command render writes what a service-mesh operator installs, from the gateway
// configuration: the Istio WasmPlugin, the token service's Kubernetes objects, the routing of
// the gateway paths, the AuthorizationPolicy of the check API, a kustomization, a plain Envoy
// bootstrap and SECRETS.md (docs/istio.md, docs/envoy.md).
//
// Usage:
//
//	render -config FILE -o DIR -module-digest sha256:… [flags]
//	render -config FILE -o DIR -envoy-only
//
// The configuration is read as the token service reads it, environment overrides included
// (SHARED_SECRET, COOKIE_SECRET, IDP_CLIENT_SECRET, …), so its secrets may stay out of the
// file. A configuration or flag that cannot be rendered is reported as "render: <key>: …" and
// exits with status 2; nothing is written then.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/mcpmesh/gateway/istio/render"
	"github.com/mcpmesh/gateway/shared/config"
)

func main() {
	os.Exit(run(os.Args[1:], os.LookupEnv, os.Stdout, os.Stderr))
}

type labelsFlag map[string]string

func (l labelsFlag) String() string {
	var parts []string
	for k, v := range l {
		parts = append(parts, k+"="+v)
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

func (l labelsFlag) Set(s string) error {
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return fmt.Errorf("want key=value[,key=value], got %q", s)
		}
		l[k] = v
	}
	return nil
}

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

func run(args []string, env config.LookupEnv, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("render", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o render.Options
	configPath := fs.String("config", "", "gateway configuration `file` (required)")
	out := fs.String("o", "", "output `directory` (required)")
	envoyOnly := fs.Bool("envoy-only", false, "write only envoy.yaml (plain Envoy, no Istio)")
	layout := fs.String("module-layout", "", "OCI layout `directory` of the module image (make oci): its manifest digest replaces -module-digest")
	modulePath := fs.String("envoy-module-path", "", "where Envoy reads filter.wasm (default /etc/envoy/filter.wasm)")
	fs.StringVar(&o.Placement, "placement", render.PlacementIngress, "where the filter runs: ingress, waypoint or sidecar")
	fs.StringVar(&o.Routing, "routing", render.RoutingIstio, "routing objects: istio (VirtualService) or gateway-api (HTTPRoute)")
	fs.StringVar(&o.ModuleImage, "module-image", render.DefaultModuleImage, "OCI repository of the module image, without tag or digest")
	fs.StringVar(&o.ModuleDigest, "module-digest", "", "manifest digest of the pushed module image, sha256:<hex>")
	fs.StringVar(&o.TokenServiceImage, "tokensvc-image", render.DefaultTokenServiceImage, "token service image reference")
	fs.StringVar(&o.IngressNamespace, "ingress-namespace", render.DefaultIngressNamespace, "namespace of the ingress gateway")
	fs.StringVar(&o.IngressServiceAccount, "ingress-service-account", render.DefaultIngressSA, "service account of the ingress gateway")
	fs.StringVar(&o.Gateway, "gateway", render.DefaultGateway, "namespace/name of the Gateway the routes bind to")
	fs.StringVar(&o.Waypoint, "waypoint", render.DefaultWaypoint, "name of the waypoint Gateway (-placement waypoint)")
	fs.StringVar(&o.WorkloadNamespace, "workload-namespace", "", "namespace of the MCP servers (-placement waypoint or sidecar)")
	fs.StringVar(&o.TrustDomain, "trust-domain", render.DefaultTrustDomain, "the mesh's trust domain")
	ingressSel, workloadSel := labelsFlag{}, labelsFlag{}
	fs.Var(ingressSel, "ingress-selector", "labels of the ingress gateway pods (default istio=ingressgateway)")
	fs.Var(workloadSel, "workload-selector", "labels of the MCP server pods (-placement sidecar)")
	var principals listFlag
	fs.Var(&principals, "filter-principal", "SPIFFE principal of a proxy that runs the filter (repeatable; default from -placement)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *configPath == "" || *out == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "render: -config and -o are required")
		fs.Usage()
		return 2
	}
	if len(ingressSel) > 0 {
		o.IngressSelector = ingressSel
	}
	o.WorkloadSelector = workloadSel
	o.FilterPrincipals = principals
	raw, err := os.ReadFile(*configPath)
	if err != nil {
		fmt.Fprintf(stderr, "render: -config: %v\n", err)
		return 2
	}
	// Relative paths in the configuration (tool_lock files) are relative to its folder.
	cfg, err := config.ParseDir(raw, env, filepath.Dir(*configPath))
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	var files []render.File
	if *envoyOnly {
		b, err := render.RenderEnvoy(cfg, render.EnvoyOptions{ModulePath: *modulePath})
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 2
		}
		files = []render.File{{Name: render.FileEnvoy, Data: b}}
	} else {
		if *layout != "" {
			d, err := layoutDigest(*layout)
			if err != nil {
				fmt.Fprintf(stderr, "render: -module-layout: %v\n", err)
				return 2
			}
			o.ModuleDigest = d
		}
		files, err = render.Render(cfg, raw, o)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 2
		}
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintf(stderr, "render: -o: %v\n", err)
		return 1
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(*out, f.Name), f.Data, 0o644); err != nil {
			fmt.Fprintf(stderr, "render: %v\n", err)
			return 1
		}
		fmt.Fprintln(stdout, filepath.Join(*out, f.Name))
	}
	return 0
}

// layoutDigest reads the digest of the one manifest in an OCI image layout's index.json.
func layoutDigest(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		return "", err
	}
	var idx struct {
		Manifests []struct {
			Digest string `json:"digest"`
		} `json:"manifests"`
	}
	if err := json.Unmarshal(b, &idx); err != nil {
		return "", fmt.Errorf("index.json: %w", err)
	}
	if len(idx.Manifests) != 1 {
		return "", errors.New("index.json: want exactly one manifest")
	}
	return idx.Manifests[0].Digest, nil
}
