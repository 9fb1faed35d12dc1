package render

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	extensionsapi "istio.io/api/extensions/v1alpha1"
	securityapi "istio.io/api/security/v1beta1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/mcpmesh/gateway/shared/config"
)

// TestRender_ObjectsCarryTheSecuritySettings reads the decoded objects: the WasmPlugin's
// pinning, phase and fail strategy; the token service's non-root, read-only container, probes
// and Secret references; the Service's two ports; the AuthorizationPolicy of the check port.
func TestRender_ObjectsCarryTheSecuritySettings(t *testing.T) {
	t.Parallel()
	files := renderExample(t, Options{})
	all := append(decodeAll(t, files[FileWasmPlugin]), decodeAll(t, files[FileTokenService])...)
	all = append(all, decodeAll(t, files[FileAuthz])...)
	seen := map[string]bool{}
	for _, d := range all {
		seen[d.Kind] = true
		switch o := d.Obj.(type) {
		case *extensionsapi.WasmPlugin:
			digest := strings.TrimPrefix(exampleDigest, "sha256:")
			if o.GetUrl() != "oci://"+DefaultModuleImage+"@sha256:"+digest || o.GetSha256() != digest {
				t.Errorf("WasmPlugin url %q sha256 %q", o.GetUrl(), o.GetSha256())
			}
			if o.GetPhase() != extensionsapi.PluginPhase_AUTHN || o.GetFailStrategy() != extensionsapi.FailStrategy_FAIL_CLOSE {
				t.Errorf("WasmPlugin phase %v failStrategy %v", o.GetPhase(), o.GetFailStrategy())
			}
			if o.GetSelector().GetMatchLabels()["istio"] != "ingressgateway" || len(o.GetTargetRefs()) != 0 {
				t.Errorf("WasmPlugin selector %v targetRefs %v", o.GetSelector(), o.GetTargetRefs())
			}
		case *appsv1.Deployment:
			ps := o.Spec.Template.Spec
			c := ps.Containers[0]
			sc := c.SecurityContext
			if sc == nil || !*sc.RunAsNonRoot || *sc.RunAsUser != 65532 || !*sc.ReadOnlyRootFilesystem || *sc.AllowPrivilegeEscalation || !slices.Contains(sc.Capabilities.Drop, "ALL") {
				t.Errorf("container security context %+v", sc)
			}
			if ps.SecurityContext == nil || *ps.SecurityContext.RunAsUser != 65532 || ps.SecurityContext.SeccompProfile == nil {
				t.Errorf("pod security context %+v", ps.SecurityContext)
			}
			if c.LivenessProbe.HTTPGet.Path != "/healthz" || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
				t.Errorf("probes %s %s", c.LivenessProbe.HTTPGet.Path, c.ReadinessProbe.HTTPGet.Path)
			}
			var env []string
			for _, e := range c.Env {
				if e.Value != "" || e.ValueFrom.SecretKeyRef.Name != "mcp-gateway-tokensvc" {
					t.Errorf("env %s is not a reference to the Secret", e.Name)
				}
				env = append(env, e.Name)
			}
			if !slices.Equal(env, []string{"SHARED_SECRET", "COOKIE_SECRET", "IDP_CLIENT_SECRET"}) {
				t.Errorf("env %v", env)
			}
			if *o.Spec.Replicas != 2 || o.Spec.Template.Annotations["mcp-gateway/config-sha256"] == "" {
				t.Errorf("replicas %d annotations %v", *o.Spec.Replicas, o.Spec.Template.Annotations)
			}
		case *corev1.Service:
			var ports []int32
			for _, p := range o.Spec.Ports {
				ports = append(ports, p.Port)
			}
			if !slices.Equal(ports, []int32{8480, 8481}) {
				t.Errorf("service ports %v", ports)
			}
		case *corev1.ConfigMap:
			cfg := o.Data["gateway.yaml"]
			for _, k := range []string{"shared_secret", "cookie_secret", "idp_client_secret"} {
				if strings.Contains(cfg, k+":") {
					t.Errorf("the ConfigMap sets %s", k)
				}
			}
		case *securityapi.AuthorizationPolicy:
			r := o.GetRules()[0]
			if o.GetAction() != securityapi.AuthorizationPolicy_DENY || !slices.Equal(r.GetTo()[0].GetOperation().GetPorts(), []string{"8481"}) ||
				!slices.Equal(r.GetFrom()[0].GetSource().GetNotPrincipals(), []string{"cluster.local/ns/istio-system/sa/istio-ingressgateway-service-account"}) {
				t.Errorf("AuthorizationPolicy %v", o)
			}
		}
	}
	for _, k := range []string{"WasmPlugin", "ServiceAccount", "ConfigMap", "Deployment", "Service", "AuthorizationPolicy"} {
		if !seen[k] {
			t.Errorf("no %s", k)
		}
	}
}

// TestRender_GatewayAPIIngressAttachesToTheGateway: with Gateway API routing the ingress is the
// proxy Istio deploys for the Gateway, so the plugin targets that Gateway in its namespace and
// the check API admits the Gateway's service account.
func TestRender_GatewayAPIIngressAttachesToTheGateway(t *testing.T) {
	t.Parallel()
	files := renderExample(t, Options{Routing: RoutingGatewayAPI, Gateway: "istio-ingress/public"})
	for _, d := range append(decodeAll(t, files[FileWasmPlugin]), decodeAll(t, files[FileAuthz])...) {
		switch o := d.Obj.(type) {
		case *extensionsapi.WasmPlugin:
			refs := o.GetTargetRefs()
			if o.GetSelector() != nil || len(refs) != 1 || refs[0].GetKind() != "Gateway" || refs[0].GetName() != "public" {
				t.Errorf("WasmPlugin selector %v targetRefs %v", o.GetSelector(), refs)
			}
		case *securityapi.AuthorizationPolicy:
			if p := o.GetRules()[0].GetFrom()[0].GetSource().GetNotPrincipals(); !slices.Equal(p, []string{"cluster.local/ns/istio-ingress/sa/public-istio"}) {
				t.Errorf("principals %v", p)
			}
		}
	}
	if !strings.Contains(string(files[FileWasmPlugin]), "namespace: istio-ingress") {
		t.Error("the WasmPlugin is not in the Gateway's namespace")
	}
}

// TestRender_UpstreamClientSecretIsMountedNotWritten: an upstream_oauth2 client secret becomes
// a Secret key mounted as a file that the ConfigMap names; its value is in no rendered file,
// and the configuration in the ConfigMap loads when the file is there.
func TestRender_UpstreamClientSecretIsMountedNotWritten(t *testing.T) {
	t.Parallel()
	for name, route := range map[string]string{
		"upstream_oauth2": `routes:
  - name: GitHub
    from: https://mcp.example.com/github
    to: http://github-mcp.mcp-servers.svc.cluster.local:8080/mcp
    mcp:
      server:
        upstream_oauth2:
          client_id: gh-client
          client_secret: upstream-secret-value-42
          endpoint: {auth_url: https://github.com/login/oauth/authorize, token_url: https://github.com/login/oauth/access_token}
`,
		"upstream_discovery": `mcp_allowed_upstream_domains: ["*.vendor.example"]
routes:
  - name: Vendor
    from: https://mcp.example.com/vendor
    to: https://mcp.vendor.example/mcp
    mcp:
      server:
        upstream_discovery:
          client_id: vendor-client
          client_secret: upstream-secret-value-42
`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testUpstreamClientSecretIsMounted(t, strings.Replace(string(readExample(t, "gateway.yaml")), "routes:\n", route, 1))
		})
	}
}

func testUpstreamClientSecretIsMounted(t *testing.T, raw string) {
	files := renderConfig(t, []byte(raw), Options{})
	for name, b := range files {
		if strings.Contains(string(b), "upstream-secret-value-42") {
			t.Errorf("%s holds the upstream client secret", name)
		}
	}
	if !strings.Contains(string(files[FileSecrets]), "| `upstream-0-client-secret` | file `/etc/mcp-gateway/secrets/upstream-0-client-secret` |") {
		t.Errorf("SECRETS.md:\n%s", files[FileSecrets])
	}
	var cm string
	for _, d := range decodeAll(t, files[FileTokenService]) {
		switch o := d.Obj.(type) {
		case *corev1.ConfigMap:
			cm = o.Data["gateway.yaml"]
		case *appsv1.Deployment:
			var found bool
			for _, v := range o.Spec.Template.Spec.Volumes {
				if v.Secret != nil && v.Secret.SecretName == "mcp-gateway-tokensvc" && len(v.Secret.Items) == 1 && v.Secret.Items[0].Key == "upstream-0-client-secret" {
					found = true
				}
			}
			if !found {
				t.Error("the Secret key is not mounted")
			}
		}
	}
	if !strings.Contains(cm, "client_secret_file: /etc/mcp-gateway/secrets/upstream-0-client-secret") {
		t.Fatalf("ConfigMap:\n%s", cm)
	}
	// Where the container mounts the Secret, the test writes the file.
	dir := t.TempDir()
	p := filepath.Join(dir, "upstream-0-client-secret")
	if err := os.WriteFile(p, []byte("upstream-secret-value-42"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse([]byte(strings.ReplaceAll(cm, "/etc/mcp-gateway/secrets/upstream-0-client-secret", p)), lookup(exampleEnv))
	if err != nil {
		t.Fatal(err)
	}
	srv := cfg.Routes[0].MCP.Server
	got := ""
	if srv.UpstreamOAuth2 != nil {
		got = srv.UpstreamOAuth2.ClientSecret
	} else if srv.UpstreamDiscovery != nil {
		got = srv.UpstreamDiscovery.ClientSecret
	}
	if got != "upstream-secret-value-42" {
		t.Errorf("the token service would read client secret %q", got)
	}
}

// TestRender_EnvironmentOverridesReachTheConfigMap: settings the environment gave when rendering
// are written into the ConfigMap, so the pod's token service runs with the configuration the
// plugin configuration came from.
func TestRender_EnvironmentOverridesReachTheConfigMap(t *testing.T) {
	t.Parallel()
	env := map[string]string{"AUTHENTICATE_SERVICE_URL": "https://login.example.org", "IDP_SCOPES": "openid,email", "IDP_CLIENT_ID": "from-env"}
	for k, v := range exampleEnv {
		env[k] = v
	}
	raw := readExample(t, "gateway.yaml")
	cfg, err := config.Parse(raw, lookup(env))
	if err != nil {
		t.Fatal(err)
	}
	fs, err := Render(cfg, raw, Options{ModuleDigest: exampleDigest})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fs {
		if f.Name != FileTokenService {
			continue
		}
		for _, d := range decodeAll(t, f.Data) {
			cm, ok := d.Obj.(*corev1.ConfigMap)
			if !ok {
				continue
			}
			pod, err := config.Parse([]byte(cm.Data["gateway.yaml"]), lookup(exampleEnv)) // the pod has the secrets only
			if err != nil {
				t.Fatal(err)
			}
			if pod.AuthenticateServiceURL != "https://login.example.org" || pod.IDPClientID != "from-env" || !slices.Equal(pod.IDPScopes, []string{"openid", "email"}) {
				t.Errorf("the pod's configuration lost the overrides: %q %q %v", pod.AuthenticateServiceURL, pod.IDPClientID, pod.IDPScopes)
			}
			if !bytes.Equal(pod.PluginConfigJSON(), cfg.PluginConfigJSON()) {
				t.Error("the pod's plugin configuration differs from the rendered one")
			}
		}
	}
}
