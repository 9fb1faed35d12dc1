package render

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	wasmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/wasm/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/wrapperspb"
	extensionsapi "istio.io/api/extensions/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/shared/pluginconf"
	"github.com/mcpmesh/gateway/tokensvc/secret"
	"github.com/mcpmesh/gateway/tokensvc/server"
	"github.com/mcpmesh/gateway/tokensvc/store"
	"github.com/mcpmesh/gateway/tokensvc/store/memory"
	"github.com/mcpmesh/gateway/wasmtest/gateway"
	"github.com/mcpmesh/gateway/wasmtest/host"
	"github.com/mcpmesh/gateway/wasmtest/wasmbuild"
)

// istioPluginConfig is what istiod hands the module: the WasmPlugin's pluginConfig Struct
// turned back into JSON (pilot/pkg/model/extensions.go), in canonical form.
func istioPluginConfig(t *testing.T, wasmPluginYAML []byte) []byte {
	t.Helper()
	docs := splitYAML(t, wasmPluginYAML)
	if len(docs) != 1 {
		t.Fatalf("%d documents in %s", len(docs), FileWasmPlugin)
	}
	var env istioObject
	if err := strictJSON(docs[0], &env); err != nil {
		t.Fatal(err)
	}
	var wp extensionsapi.WasmPlugin
	if err := protojson.Unmarshal(env.Spec, &wp); err != nil {
		t.Fatal(err)
	}
	j, err := protojson.Marshal(wp.GetPluginConfig())
	if err != nil {
		t.Fatal(err)
	}
	c, err := pluginconf.Canonical(j)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// envoyPluginConfig is the configuration the Envoy bootstrap hands the module.
func envoyPluginConfig(t *testing.T, envoyYAML []byte) [][]byte {
	t.Helper()
	bs, err := decodeEnvoy(envoyYAML)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, l := range bs.GetStaticResources().GetListeners() {
		var hcm hcmv3.HttpConnectionManager
		if err := l.GetFilterChains()[0].GetFilters()[0].GetTypedConfig().UnmarshalTo(&hcm); err != nil {
			t.Fatal(err)
		}
		var w wasmv3.Wasm
		if err := hcm.GetHttpFilters()[0].GetTypedConfig().UnmarshalTo(&w); err != nil {
			t.Fatal(err)
		}
		var sv wrapperspb.StringValue
		if err := w.GetConfig().GetConfiguration().UnmarshalTo(&sv); err != nil {
			t.Fatal(err)
		}
		out = append(out, []byte(sv.GetValue()))
	}
	return out
}

// TestPluginConfig_IsWhatTheLocalGatewayHandsTheModule: byte for byte, through Istio's Struct
// and through the Envoy bootstrap.
func TestPluginConfig_IsWhatTheLocalGatewayHandsTheModule(t *testing.T) {
	t.Parallel()
	for name, v := range variants {
		raw := readExample(t, v.config)
		cfg, err := config.Parse(raw, lookup(exampleEnv))
		if err != nil {
			t.Fatal(err)
		}
		want := gateway.FilterOptions(cfg, nil).PluginConfig
		files := renderConfig(t, raw, v.o)
		if got := istioPluginConfig(t, files[FileWasmPlugin]); !bytes.Equal(got, want) {
			t.Errorf("%s: WasmPlugin pluginConfig\n%s\nlocal gateway\n%s", name, got, want)
		}
		for _, got := range envoyPluginConfig(t, files[FileEnvoy]) {
			if !bytes.Equal(got, want) {
				t.Errorf("%s: Envoy configuration\n%s\nlocal gateway\n%s", name, got, want)
			}
		}
	}
}

// secretEnv reads the Deployment's environment from the Secret values: what the container
// gets in the cluster.
func secretEnv(t *testing.T, tokensvcYAML []byte, secret map[string]string) config.LookupEnv {
	t.Helper()
	env := map[string]string{}
	for _, d := range decodeAll(t, tokensvcYAML) {
		if dd, ok := d.Obj.(*appsv1.Deployment); ok {
			for _, e := range dd.Spec.Template.Spec.Containers[0].Env {
				if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
					t.Fatalf("env %s is not from the Secret", e.Name)
				}
				v, ok := secret[e.ValueFrom.SecretKeyRef.Key]
				if !ok {
					t.Fatalf("the Secret has no key %s", e.ValueFrom.SecretKeyRef.Key)
				}
				env[e.Name] = v
			}
		}
	}
	return lookup(env)
}

// TestModule_DecidesWithTheRenderedConfiguration runs filter.wasm in the wasmtest host with
// the rendered WasmPlugin's pluginConfig, against a token service started from the rendered
// ConfigMap and the Secret keys SECRETS.md names, and checks decisions.
func TestModule_DecidesWithTheRenderedConfiguration(t *testing.T) {
	raw := strings.Replace(string(readExample(t, "gateway.yaml")), "  type: postgres\n  dsn: postgres://gateway@postgres.mcp-gateway.svc.cluster.local:5432/gateway?sslmode=require\n", "  type: memory\n", 1)
	files := renderConfig(t, []byte(raw), Options{})
	secret := map[string]string{
		"shared-secret":     exampleEnv["SHARED_SECRET"],
		"cookie-secret":     exampleEnv["COOKIE_SECRET"],
		"idp-client-secret": exampleEnv["IDP_CLIENT_SECRET"],
	}
	var cm []byte
	for _, d := range decodeAll(t, files[FileTokenService]) {
		if c, ok := d.Obj.(*corev1.ConfigMap); ok {
			cm = []byte(c.Data["gateway.yaml"])
		}
	}
	cfg, err := config.Parse(cm, secretEnv(t, files[FileTokenService], secret))
	if err != nil {
		t.Fatalf("the token service would not start from the ConfigMap: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := memory.New()
	ts, err := server.New(ctx, cfg, server.WithStore(st), server.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	h, err := host.New(ctx, wasmbuild.Module(t), host.Options{
		PluginName: "mcp-gateway", RootID: "mcp-gateway", VMID: "mcp-gateway",
		PluginConfig: istioPluginConfig(t, files[FileWasmPlugin]),
		Clusters:     map[string]host.Cluster{cfg.TokenService.Cluster: {Handler: ts.InternalHandler()}},
		LogLevel:     host.LogInfo,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	var upstream struct{ auth, assertion, body string }
	handler := h.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		upstream.auth, upstream.assertion, upstream.body = r.Header.Get("Authorization"), r.Header.Get("X-Gateway-Assertion"), string(b)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	}), nil)
	call := func(token, body string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, "https://mcp.example.com/tools", strings.NewReader(body))
		r.TLS = &tls.ConnectionState{}
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, r)
		return w
	}
	toolCall := func(tool string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":{}}}`
	}
	if w := call("", toolCall("search")); w.Code != http.StatusUnauthorized || !strings.Contains(w.Header().Get("WWW-Authenticate"), "https://mcp.example.com/.well-known/oauth-protected-resource/tools") {
		t.Fatalf("no token: %d %q", w.Code, w.Header().Get("WWW-Authenticate"))
	}
	// A gateway path passes the filter untouched; the rendered routing sends it to the token
	// service (TestRouting_…).
	reached := false
	gw := h.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached = true }), nil)
	r := httptest.NewRequest(http.MethodGet, "https://mcp.example.com/.well-known/oauth-protected-resource/tools", nil)
	r.TLS = &tls.ConnectionState{}
	gw.ServeHTTP(httptest.NewRecorder(), r)
	if !reached {
		t.Fatal("the filter stopped a gateway path")
	}
	if w := call("not-a-token", toolCall("search")); w.Code != http.StatusUnauthorized {
		t.Fatalf("unknown token: %d", w.Code)
	}
	tok := seedUser(t, st, "alice@example.com")
	if w := call(tok, toolCall("search")); w.Code != http.StatusOK || upstream.assertion == "" || upstream.auth != "" {
		t.Fatalf("allowed call: %d %s (upstream saw Authorization %q, assertion %q)", w.Code, w.Body, upstream.auth, upstream.assertion)
	}
	upstream.body = ""
	w := call(tok, toolCall("delete_everything"))
	if upstream.body != "" || w.Code == http.StatusOK && !strings.Contains(w.Body.String(), `"error"`) && !strings.Contains(w.Body.String(), `"isError":true`) {
		t.Fatalf("a denied tool reached the upstream or was not refused: %d %s", w.Code, w.Body)
	}
	t.Logf("denied tool: %d %s", w.Code, w.Body)
	// Evidence for docs/filter.md: how often the Go scheduler calls poll_oneoff while the
	// module serves requests (an old proxy-wasm host fails the VM on the first call).
	for range 300 {
		call(tok, toolCall("search"))
	}
	t.Logf("poll_oneoff calls after 304 requests: %d", h.PollOneoffCalls())
	other := seedUser(t, st, "mallory@evil.example")
	upstream.body = ""
	// A tool call denied by policy is answered with an isError result (docs/decisions.md).
	if w := call(other, toolCall("search")); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"isError":true`) || upstream.body != "" {
		t.Fatalf("a user of another domain: %d %s", w.Code, w.Body)
	}
}

func seedUser(t *testing.T, st store.Store, email string) string {
	t.Helper()
	ctx, now := context.Background(), time.Now()
	s := store.Session{ID: secret.NewToken(), Subject: email, Email: email, Claims: []byte(`{"sub":"` + email + `","email":"` + email + `"}`), CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	if err := st.CreateSession(ctx, s); err != nil {
		t.Fatal(err)
	}
	tok := secret.NewToken()
	if err := st.CreateAccessToken(ctx, store.AccessToken{Hash: secret.Hash(tok), ClientID: "c", SessionID: s.ID, Subject: email, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	return tok
}
