package render

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/shared/pluginconf"
)

// Files written by Render, in the order they are listed.
const (
	FileWasmPlugin   = "wasmplugin.yaml"
	FileTokenService = "tokensvc.yaml"
	FileRouting      = "routing.yaml"
	FileAuthz        = "authorizationpolicy.yaml"
	FileEnvoy        = "envoy.yaml"
	FileKustomize    = "kustomization.yaml"
	FileSecrets      = "SECRETS.md"
)

// File is one rendered file.
type File struct {
	Name string
	Data []byte
}

// Render renders everything for Istio (and the plain Envoy bootstrap). cfg is the validated
// configuration and raw the configuration file it was parsed from (the ConfigMap is raw without
// its secrets). An *Error names what cannot be rendered.
func Render(cfg *config.Config, raw []byte, o Options) ([]File, error) {
	opts, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	ts, err := parseTokenService(cfg)
	if err != nil {
		return nil, err
	}
	r := &renderer{cfg: cfg, o: opts, ts: ts, pc: cfg.PluginConfig()}
	r.secrets = secretKeys(cfg)
	cm, err := configMapData(cfg, raw, r.secrets)
	if err != nil {
		return nil, err
	}
	wp, err := r.wasmPlugin()
	if err != nil {
		return nil, err
	}
	routing, err := r.routing()
	if err != nil {
		return nil, err
	}
	envoy, err := RenderEnvoy(cfg, EnvoyOptions{})
	if err != nil {
		return nil, err
	}
	files := []File{
		{FileWasmPlugin, docs(wp)},
		{FileTokenService, docs(r.tokenServiceObjects(cm)...)},
		{FileRouting, docs(routing...)},
		{FileAuthz, docs(r.authorizationPolicy())},
		{FileEnvoy, envoy},
		{FileKustomize, docs(obj{
			"apiVersion": "kustomize.config.k8s.io/v1beta1",
			"kind":       "Kustomization",
			"resources":  []any{FileTokenService, FileWasmPlugin, FileRouting, FileAuthz},
		})},
		{FileSecrets, r.secretsDoc()},
	}
	return files, nil
}

type obj = map[string]any

type renderer struct {
	cfg     *config.Config
	o       Options
	ts      tokenService
	pc      *pluginconf.Config
	secrets []secretKey
}

// docs encodes objects as a YAML stream, map keys sorted (yaml.v3), two-space indents.
func docs(objs ...obj) []byte {
	var b bytes.Buffer
	for i, o := range objs {
		if i > 0 {
			b.WriteString("---\n")
		}
		enc := yaml.NewEncoder(&b)
		enc.SetIndent(2)
		if err := enc.Encode(o); err != nil {
			panic("render: encode YAML: " + err.Error()) // unreachable: plain maps, lists and scalars
		}
		_ = enc.Close()
	}
	return b.Bytes()
}

func meta(name, namespace string, labels map[string]any) obj {
	m := obj{"name": name, "namespace": namespace}
	if labels != nil {
		m["labels"] = labels
	}
	return m
}

func partOf() map[string]any { return map[string]any{"app.kubernetes.io/part-of": "mcp-gateway"} }

func strMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// wasmPlugin is the Istio WasmPlugin of filter.wasm.
func (r *renderer) wasmPlugin() (obj, error) {
	pcfg, err := pluginConfigValue(r.cfg.PluginConfigJSON())
	if err != nil {
		return nil, err
	}
	spec := obj{
		"url":             "oci://" + r.o.ModuleImage + "@" + r.o.ModuleDigest,
		"sha256":          strings.TrimPrefix(r.o.ModuleDigest, "sha256:"),
		"imagePullPolicy": "IfNotPresent",
		"phase":           "AUTHN",
		"failStrategy":    "FAIL_CLOSE",
		"pluginName":      "mcp-gateway",
		"pluginConfig":    pcfg,
	}
	ns := r.o.WorkloadNamespace
	switch r.o.Placement {
	case PlacementIngress:
		ns = r.o.IngressNamespace
		spec["selector"] = obj{"matchLabels": strMap(r.o.IngressSelector)}
		if r.o.Routing == RoutingGatewayAPI {
			// A Gateway API Gateway's proxy is deployed by Istio for that Gateway: the
			// plugin attaches to it by reference, in its namespace.
			gwNS, gwName, _ := strings.Cut(r.o.Gateway, "/")
			ns = gwNS
			delete(spec, "selector")
			spec["targetRefs"] = []any{obj{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": gwName}}
		}
	case PlacementWaypoint:
		spec["targetRefs"] = []any{obj{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": r.o.Waypoint}}
	case PlacementSidecar:
		spec["selector"] = obj{"matchLabels": strMap(r.o.WorkloadSelector)}
		spec["match"] = []any{obj{"mode": "SERVER"}}
	}
	return obj{
		"apiVersion": "extensions.istio.io/v1alpha1",
		"kind":       "WasmPlugin",
		"metadata":   meta("mcp-gateway", ns, partOf()),
		"spec":       spec,
	}, nil
}

// pluginConfigValue decodes the canonical plugin configuration into YAML-encodable values.
// A WasmPlugin's pluginConfig is a protobuf Struct, whose numbers are doubles: a number a
// double cannot hold exactly would reach the filter changed, so it is refused.
func pluginConfigValue(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, &Error{Key: "plugin configuration", Msg: err.Error()}
	}
	return structValue(v, "")
}

func structValue(v any, path string) (any, error) {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			c, err := structValue(e, path+"."+k)
			if err != nil {
				return nil, err
			}
			t[k] = c
		}
		return t, nil
	case []any:
		for i, e := range t {
			c, err := structValue(e, path+"["+strconv.Itoa(i)+"]")
			if err != nil {
				return nil, err
			}
			t[i] = c
		}
		return t, nil
	case json.Number:
		f, err := strconv.ParseFloat(t.String(), 64)
		if err != nil || math.IsInf(f, 0) {
			return nil, &Error{Key: "plugin configuration" + path, Msg: "number out of range: " + t.String()}
		}
		if i, err := strconv.ParseInt(t.String(), 10, 64); err == nil {
			if float64(i) != f || i > 1<<53 || i < -(1<<53) {
				return nil, &Error{Key: "plugin configuration" + path, Msg: "integer " + t.String() + " cannot pass through an Istio pluginConfig (a protobuf Struct holds doubles)"}
			}
			return i, nil
		}
		if strconv.FormatFloat(f, 'g', -1, 64) != t.String() {
			return nil, &Error{Key: "plugin configuration" + path, Msg: "number " + t.String() + " would not reach the filter as written; write it as " + strconv.FormatFloat(f, 'g', -1, 64)}
		}
		return f, nil
	}
	return v, nil
}

// tokenServiceObjects are the token service's ServiceAccount, ConfigMap, Deployment and
// Service.
func (r *renderer) tokenServiceObjects(cm []byte) []obj {
	ts := r.ts
	sum := sha256.Sum256(cm)
	replicas := 1
	strategy := obj{"type": "Recreate"}
	if r.cfg.Storage.Type == "postgres" {
		replicas = 2
		strategy = obj{"type": "RollingUpdate", "rollingUpdate": obj{"maxUnavailable": 0, "maxSurge": 1}}
	}
	mounts := []any{
		obj{"name": "config", "mountPath": configDir, "readOnly": true},
		obj{"name": "tmp", "mountPath": "/tmp"},
	}
	volumes := []any{
		obj{"name": "config", "configMap": obj{"name": ts.Name + "-config"}},
		obj{"name": "tmp", "emptyDir": obj{}},
	}
	if r.cfg.Storage.Type == "sqlite" {
		mounts = append(mounts, obj{"name": "data", "mountPath": dataDir})
		volumes = append(volumes, obj{"name": "data", "emptyDir": obj{}})
	}
	var env, items []any
	for _, s := range r.secrets {
		ref := obj{"secretKeyRef": obj{"name": ts.Name, "key": s.Key}}
		if s.Env != "" {
			env = append(env, obj{"name": s.Env, "valueFrom": ref})
		} else {
			items = append(items, obj{"key": s.Key, "path": s.Key})
		}
	}
	if len(items) > 0 {
		mounts = append(mounts, obj{"name": "secrets", "mountPath": secretDir, "readOnly": true})
		volumes = append(volumes, obj{"name": "secrets", "secret": obj{"secretName": ts.Name, "items": items, "defaultMode": 0o440}})
	}
	probe := func(path string, period int) obj {
		return obj{"httpGet": obj{"path": path, "port": "http-public"}, "periodSeconds": period, "timeoutSeconds": 3}
	}
	container := obj{
		"name":            "tokensvc",
		"image":           r.o.TokenServiceImage,
		"imagePullPolicy": "IfNotPresent",
		"args":            []any{"-config", configDir + "/" + configFile},
		"env":             env,
		"ports": []any{
			obj{"name": "http-public", "containerPort": ts.PublicPort, "protocol": "TCP"},
			obj{"name": "http-internal", "containerPort": ts.InternalPort, "protocol": "TCP"},
		},
		"readinessProbe": probe("/readyz", 5),
		"livenessProbe":  probe("/healthz", 10),
		"resources": obj{
			"requests": obj{"cpu": "50m", "memory": "64Mi"},
			"limits":   obj{"memory": "256Mi"},
		},
		"securityContext": obj{
			"runAsNonRoot":             true,
			"runAsUser":                65532,
			"runAsGroup":               65532,
			"readOnlyRootFilesystem":   true,
			"allowPrivilegeEscalation": false,
			"capabilities":             obj{"drop": []any{"ALL"}},
		},
		"volumeMounts": mounts,
	}
	if env == nil {
		delete(container, "env")
	}
	sel := obj{"app.kubernetes.io/name": ts.Name}
	return []obj{
		{
			"apiVersion":                   "v1",
			"kind":                         "ServiceAccount",
			"metadata":                     meta(ts.Name, ts.Namespace, ts.labels()),
			"automountServiceAccountToken": false,
		},
		{
			"apiVersion": "v1",
			"kind":       "ConfigMap",
			"metadata":   meta(ts.Name+"-config", ts.Namespace, ts.labels()),
			"data":       obj{configFile: string(cm)},
		},
		{
			"apiVersion": "apps/v1",
			"kind":       "Deployment",
			"metadata":   meta(ts.Name, ts.Namespace, ts.labels()),
			"spec": obj{
				"replicas": replicas,
				"strategy": strategy,
				"selector": obj{"matchLabels": sel},
				"template": obj{
					"metadata": obj{
						"labels":      ts.labels(),
						"annotations": obj{"mcp-gateway/config-sha256": hex.EncodeToString(sum[:])},
					},
					"spec": obj{
						"serviceAccountName":           ts.Name,
						"automountServiceAccountToken": false,
						"securityContext": obj{
							"runAsNonRoot":   true,
							"runAsUser":      65532,
							"runAsGroup":     65532,
							"fsGroup":        65532,
							"seccompProfile": obj{"type": "RuntimeDefault"},
						},
						"containers": []any{container},
						"volumes":    volumes,
					},
				},
			},
		},
		{
			"apiVersion": "v1",
			"kind":       "Service",
			"metadata":   meta(ts.Name, ts.Namespace, ts.labels()),
			"spec": obj{
				"selector": sel,
				"ports": []any{
					obj{"name": "http-public", "port": ts.PublicPort, "targetPort": "http-public", "protocol": "TCP", "appProtocol": "http"},
					obj{"name": "http-internal", "port": ts.InternalPort, "targetPort": "http-internal", "protocol": "TCP", "appProtocol": "http"},
				},
			},
		},
	}
}

// authorizationPolicy denies the check API's port to every caller but the filter's proxies.
func (r *renderer) authorizationPolicy() obj {
	var principals []any
	for _, p := range r.o.principals() {
		principals = append(principals, p)
	}
	return obj{
		"apiVersion": "security.istio.io/v1",
		"kind":       "AuthorizationPolicy",
		"metadata":   meta(r.ts.Name+"-check-api", r.ts.Namespace, r.ts.labels()),
		"spec": obj{
			"selector": obj{"matchLabels": obj{"app.kubernetes.io/name": r.ts.Name}},
			"action":   "DENY",
			"rules": []any{obj{
				"from": []any{obj{"source": obj{"notPrincipals": principals}}},
				"to":   []any{obj{"operation": obj{"ports": []any{strconv.Itoa(r.ts.InternalPort)}}}},
			}},
		},
	}
}

// hostName splits a normalised route host ("mcp.example.com", "mcp.example.com:8443") into
// its name and port (0 for the scheme's default).
func hostName(host string) (string, int) {
	u := url.URL{Host: host}
	p, _ := strconv.Atoi(u.Port())
	return u.Hostname(), p
}

// objName makes a DNS-1123 name from parts.
func objName(parts ...string) string {
	s := strings.ToLower(strings.Join(parts, "-"))
	var b strings.Builder
	for _, c := range s {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' {
			b.WriteRune(c)
		} else {
			b.WriteByte('-')
		}
	}
	n := strings.Trim(b.String(), "-")
	if len(n) > 63 {
		sum := sha256.Sum256([]byte(n))
		n = strings.TrimRight(n[:54], "-") + "-" + hex.EncodeToString(sum[:4])
	}
	return n
}

// routeHosts lists the route hosts and the authenticate host, sorted.
func (r *renderer) hosts() (routeHosts []string, authHost string) {
	seen := map[string]bool{}
	for _, rt := range r.pc.Routes {
		if !seen[rt.Host] {
			seen[rt.Host] = true
			routeHosts = append(routeHosts, rt.Host)
		}
	}
	sort.Strings(routeHosts)
	if u, err := url.Parse(r.cfg.AuthenticateServiceURL); err == nil {
		n, _ := config.NormalizeFrom(u.Scheme + "://" + u.Host)
		authHost = n.Host
	}
	return routeHosts, authHost
}
