package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/wasm/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	_ "google.golang.org/protobuf/types/known/wrapperspb"
	"gopkg.in/yaml.v3"
	extensionsapi "istio.io/api/extensions/v1alpha1"
	networkingapi "istio.io/api/networking/v1alpha3"
	securityapi "istio.io/api/security/v1beta1"
	clientextensions "istio.io/client-go/pkg/apis/extensions/v1alpha1"
	clientnetworking "istio.io/client-go/pkg/apis/networking/v1"
	clientsecurity "istio.io/client-go/pkg/apis/security/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
	sigsjson "sigs.k8s.io/json"
	sigyaml "sigs.k8s.io/yaml"
)

// decoded is one rendered object decoded into its API type.
type decoded struct {
	Kind string
	Name string
	// Obj is the Kubernetes or Gateway API object, or for Istio kinds the spec's API message.
	Obj any
}

// splitYAML returns each document of a YAML stream as JSON.
func splitYAML(t *testing.T, b []byte) [][]byte {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var out [][]byte
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("YAML: %v", err)
		}
		y, err := yaml.Marshal(&n)
		if err != nil {
			t.Fatal(err)
		}
		j, err := sigyaml.YAMLToJSON(y)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, j)
	}
}

// strictJSON decodes j into v, unknown fields being errors.
func strictJSON(j []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// istioObject is the envelope of an Istio object: metadata as Kubernetes has it, the spec
// decoded separately by protojson (strict), since the generated JSON decoders of istio.io/api
// accept unknown fields.
type istioObject struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       json.RawMessage   `json:"spec"`
}

// decodeObject decodes one rendered Kubernetes object strictly into its API type.
func decodeObject(j []byte) (decoded, error) {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := json.Unmarshal(j, &head); err != nil {
		return decoded{}, err
	}
	k8s := map[string]func() any{
		"v1/ServiceAccount":                      func() any { return &corev1.ServiceAccount{} },
		"v1/ConfigMap":                           func() any { return &corev1.ConfigMap{} },
		"v1/Service":                             func() any { return &corev1.Service{} },
		"apps/v1/Deployment":                     func() any { return &appsv1.Deployment{} },
		"gateway.networking.k8s.io/v1/HTTPRoute": func() any { return &gatewayv1.HTTPRoute{} },
		"gateway.networking.k8s.io/v1beta1/ReferenceGrant": func() any { return &gatewayv1beta1.ReferenceGrant{} },
	}
	key := head.APIVersion + "/" + head.Kind
	if mk, ok := k8s[key]; ok {
		v := mk()
		// Kubernetes' own strict decoding: field names match case-sensitively, unknown and
		// duplicate fields are errors.
		strict, err := sigsjson.UnmarshalStrict(j, v, sigsjson.DisallowUnknownFields, sigsjson.DisallowDuplicateFields)
		if err == nil && len(strict) > 0 {
			err = errors.Join(strict...)
		}
		if err != nil {
			return decoded{}, fmt.Errorf("%s: %w", key, err)
		}
		return decoded{Kind: head.Kind, Name: v.(metav1.Object).GetName(), Obj: v}, nil
	}
	istio := map[string]struct {
		spec   func() proto.Message
		client func() any
	}{
		"extensions.istio.io/v1alpha1/WasmPlugin":  {func() proto.Message { return &extensionsapi.WasmPlugin{} }, func() any { return &clientextensions.WasmPlugin{} }},
		"networking.istio.io/v1/VirtualService":    {func() proto.Message { return &networkingapi.VirtualService{} }, func() any { return &clientnetworking.VirtualService{} }},
		"security.istio.io/v1/AuthorizationPolicy": {func() proto.Message { return &securityapi.AuthorizationPolicy{} }, func() any { return &clientsecurity.AuthorizationPolicy{} }},
		"security.istio.io/v1/PeerAuthentication":  {func() proto.Message { return &securityapi.PeerAuthentication{} }, func() any { return &clientsecurity.PeerAuthentication{} }},
		"networking.istio.io/v1/Gateway":           {func() proto.Message { return &networkingapi.Gateway{} }, func() any { return &clientnetworking.Gateway{} }},
	}
	mk, ok := istio[key]
	if !ok {
		return decoded{}, fmt.Errorf("unexpected kind %s", key)
	}
	var env istioObject
	if err := strictJSON(j, &env); err != nil {
		return decoded{}, fmt.Errorf("%s: %w", key, err)
	}
	spec := mk.spec()
	if err := (protojson.UnmarshalOptions{}).Unmarshal(env.Spec, spec); err != nil {
		return decoded{}, fmt.Errorf("%s spec: %w", key, err)
	}
	// The client-go type too, as kubectl and istiod's informers read it.
	if err := json.Unmarshal(j, mk.client()); err != nil {
		return decoded{}, fmt.Errorf("%s (client-go): %w", key, err)
	}
	return decoded{Kind: head.Kind, Name: env.Metadata.Name, Obj: spec}, nil
}

// decodeAll decodes every object of a rendered YAML file.
func decodeAll(t *testing.T, b []byte) []decoded {
	t.Helper()
	var out []decoded
	for _, j := range splitYAML(t, b) {
		d, err := decodeObject(j)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

// decodeEnvoy decodes a bootstrap strictly (protojson refuses unknown fields and unknown
// Any types) and validates it with go-control-plane's generated rules.
func decodeEnvoy(b []byte) (*bootstrapv3.Bootstrap, error) {
	j, err := sigyaml.YAMLToJSON(b)
	if err != nil {
		return nil, err
	}
	var bs bootstrapv3.Bootstrap
	if err := (protojson.UnmarshalOptions{}).Unmarshal(j, &bs); err != nil {
		return nil, err
	}
	if err := bs.ValidateAll(); err != nil {
		return nil, err
	}
	return &bs, nil
}

// TestDecoders_RefuseUnknownFields: the decoders the other tests rely on would catch a
// misspelt field.
func TestDecoders_RefuseUnknownFields(t *testing.T) {
	t.Parallel()
	files := renderExample(t, Options{})
	for _, tc := range []struct{ file, from, to string }{
		{FileWasmPlugin, "failStrategy:", "failStrategyy:"},
		{FileWasmPlugin, "  name: mcp-gateway\n", "  name: mcp-gateway\n  nam: x\n"},
		{FileRouting, "gateways:", "gateway:"},
		{FileAuthz, "notPrincipals:", "notPrincipal:"},
		{FileTokenService, "readOnlyRootFilesystem:", "readOnlyRootFileSystem:"},
	} {
		b := []byte(strings.Replace(string(files[tc.file]), tc.from, tc.to, 1))
		failed := false
		for _, j := range splitYAML(t, b) {
			if _, err := decodeObject(j); err != nil {
				failed = true
			}
		}
		if !failed {
			t.Errorf("%s with %q → %q decoded without error", tc.file, tc.from, tc.to)
		}
	}
	bad := strings.Replace(string(files[FileEnvoy]), "failure_policy:", "failure_polic:", 1)
	if _, err := decodeEnvoy([]byte(bad)); err == nil {
		t.Error("an unknown Envoy field decoded without error")
	}
	bad = strings.Replace(string(files[FileEnvoy]), "connect_timeout: 2s", "connect_timeout: -2s", 1)
	if _, err := decodeEnvoy([]byte(bad)); err == nil {
		t.Error("a negative connect_timeout passed ValidateAll")
	}
}
