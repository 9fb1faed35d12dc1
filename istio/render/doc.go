// Package render turns the gateway configuration (shared/config) into what a service-mesh
// operator installs: the Istio WasmPlugin of filter.wasm, the token service's ServiceAccount,
// ConfigMap, Deployment and Service, the routing of the gateway paths of every route host to
// the token service (Istio VirtualService or Gateway API HTTPRoute), the AuthorizationPolicy
// that keeps the check API to the filter's proxies, a kustomization, a plain Envoy bootstrap,
// and SECRETS.md naming the Secret keys to create (docs/istio.md, docs/envoy.md).
//
// Rendering is deterministic: the same configuration and options give the same bytes. The
// plugin configuration is config.PluginConfigJSON, the bytes the local gateway hands the
// module. The objects are written as plain YAML maps; the package imports no Kubernetes,
// Istio or Envoy types (its tests decode the output strictly into them).
package render
