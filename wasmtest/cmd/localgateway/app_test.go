package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/tokensvc/secret"
	"github.com/mcpmesh/gateway/tokensvc/store"
	"github.com/mcpmesh/gateway/wasmtest/host"
	"github.com/mcpmesh/gateway/wasmtest/wasmbuild"
)

// syncBuffer is a bytes.Buffer safe for the logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// fixture is a local gateway on loopback listeners in front of a loopback upstream.
type fixture struct {
	t        *testing.T
	path     string // configuration file
	authURL  string
	mcpURL   string
	upstream string
	app      *app
	logs     *syncBuffer
	token    string
}

const allowAlice = `{allow: {and: [{authenticated_user: true}]}}`
const allowBobOnly = `{allow: {and: [{email: {is: bob@example.com}}]}}`

// yaml is the fixture's configuration with policy and log fields.
func (f *fixture) yaml(authURL, policy, fields string) string {
	return fmt.Sprintf(`
runtime_flags: {mcp: true}
authenticate_service_url: %s
shared_secret: ZGVtby1vbmx5LXNoYXJlZC1zZWNyZXQtMzItYnl0ZXM=
cookie_secret: ZGVtby1vbmx5LWNvb2tpZS1zZWNyZXQtMzItYnl0ZXM=
idp_provider: oidc
idp_provider_url: http://127.0.0.1:1
idp_client_id: gw
idp_client_secret: s
storage: {type: memory}
authorize_log_fields: %s
routes:
  - from: %s
    to: %s
    policy: %s
    mcp: {server: {}}
`, authURL, fields, f.mcpURL, f.upstream, policy)
}

func (f *fixture) write(content string) {
	f.t.Helper()
	tmp := f.path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		f.t.Fatal(err)
	}
	if err := os.Rename(tmp, f.path); err != nil {
		f.t.Fatal(err)
	}
}

// startApp serves a local gateway whose route has policy and log fields, logging in format.
func startApp(t *testing.T, format, policy, fields string, upstreamDelay time.Duration) *fixture {
	return startAppAt(t, host.LogInfo, format, policy, fields, upstreamDelay)
}

// startAppAt is startApp with the filter at wasm log level.
func startAppAt(t *testing.T, wasm host.LogLevel, format, policy, fields string, upstreamDelay time.Duration) *fixture {
	t.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		time.Sleep(upstreamDelay)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	}))
	t.Cleanup(up.Close)
	authL, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mcpL, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, path: filepath.Join(t.TempDir(), "gateway.yaml"), authURL: "http://" + authL.Addr().String(),
		mcpURL: "http://" + mcpL.Addr().String() + "/mcp", upstream: up.URL + "/mcp", logs: &syncBuffer{}}
	f.write(f.yaml(f.authURL, policy, fields))
	cfg, err := config.Load(f.path)
	if err != nil {
		t.Fatal(err)
	}
	logger, err := newLogger(format, wasm, f.logs)
	if err != nil {
		t.Fatal(err)
	}
	f.app = &app{path: f.path, module: wasmbuild.Module(t), workers: 2, logger: logger, wasmLevel: wasm, grace: 5 * time.Second}
	ctx, cancel := context.WithCancel(context.Background())
	if err := f.app.start(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = f.app.live.Serve(ctx, []net.Listener{authL, mcpL}) }()
	t.Cleanup(func() { cancel(); <-done; f.app.close() })
	f.token = seedToken(t, f.app.cur.ts.Store())
	return f
}

// seedToken stores a live session of alice and an External Token valid at every route.
func seedToken(t *testing.T, st store.Store) string {
	t.Helper()
	ctx, now := context.Background(), time.Now()
	s := store.Session{ID: secret.NewToken(), Subject: "alice", Email: "alice@example.com", Claims: []byte(`{"sub":"alice","email":"alice@example.com"}`), CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	if err := st.CreateSession(ctx, s); err != nil {
		t.Fatal(err)
	}
	tok := secret.NewToken()
	if err := st.CreateAccessToken(ctx, store.AccessToken{Hash: secret.Hash(tok), ClientID: "c", SessionID: s.ID, Subject: "alice", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	return tok
}

// call sends a tools/call to the MCP route with alice's token and returns the status.
func (f *fixture) call(client *http.Client) (int, error) {
	req, _ := http.NewRequest(http.MethodPost, f.mcpURL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{"q":"x"}}}`))
	req.Header.Set("Authorization", "Bearer "+f.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	// A tool call denied by policy is answered by the gateway with 200 and an isError result
	// (docs/decisions.md): counted here as the denial it is.
	if resp.StatusCode == http.StatusOK && strings.Contains(string(body), `"isError":true`) && strings.Contains(string(body), "Denied by the MCP gateway") {
		return http.StatusForbidden, nil
	}
	return resp.StatusCode, nil
}

// records returns the lines of logs that parse as JSON objects with message
// "authorize check".
func records(t *testing.T, logs string) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(logs))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil && m["message"] == "authorize check" {
			out = append(out, m)
		}
	}
	return out
}

func TestLocalGateway_PrintsEachAuthorizationRecordAsItself(t *testing.T) {
	t.Parallel()
	const specFields = `[request-id, user, email, mcp-method, mcp-tool, mcp-tool-parameters]`
	const fullFields = `[request-id, user, email, allow, allow-why-true, allow-why-false, deny, deny-why-false, mcp-method, mcp-tool, mcp-tool-parameters]`
	cases := []struct {
		name, format, fields string
		wasm                 host.LogLevel
		check                func(t *testing.T, logs string)
	}{
		{"JSONSpecExample", "json", specFields, host.LogInfo, func(t *testing.T, logs string) {
			if strings.Contains(logs, `\"message\":\"authorize check\"`) {
				t.Errorf("a record is still escaped inside another line:\n%s", logs)
			}
			recs := records(t, logs)
			if len(recs) != 1 {
				t.Fatalf("%d records, want 1:\n%s", len(recs), logs)
			}
			r := recs[0]
			for _, k := range []string{"request-id", "user", "email", "mcp-method", "mcp-tool", "mcp-tool-parameters"} {
				if _, ok := r[k]; !ok {
					t.Errorf("record lacks %s: %v", k, r)
				}
			}
			if r["user"] != "alice" || r["mcp-method"] != "tools/call" || r["mcp-tool"] != "search" {
				t.Errorf("record %v", r)
			}
			if p, _ := r["mcp-tool-parameters"].(map[string]any); p["q"] != "x" {
				t.Errorf("mcp-tool-parameters %v", r["mcp-tool-parameters"])
			}
			// The decision is in the record although the list names none of its fields.
			if r["allow"] != true || r["deny"] != false {
				t.Errorf("decision fields under the SPEC list: %v", r)
			}
			for _, k := range []string{"allow-why-true", "allow-why-false", "deny-why-false"} {
				if _, ok := r[k]; !ok {
					t.Errorf("record lacks %s: %v", k, r)
				}
			}
		}},
		{"JSONFullListHasTheDecision", "json", fullFields, host.LogInfo, func(t *testing.T, logs string) {
			recs := records(t, logs)
			if len(recs) != 1 {
				t.Fatalf("%d records, want 1:\n%s", len(recs), logs)
			}
			r := recs[0]
			if r["allow"] != true || r["deny"] != false {
				t.Errorf("decision fields: %v", r)
			}
			for _, k := range []string{"allow-why-true", "allow-why-false", "deny-why-false"} {
				if _, ok := r[k]; !ok {
					t.Errorf("record lacks %s: %v", k, r)
				}
			}
		}},
		{"WasmLogLevelWarnSilencesThem", "json", specFields, host.LogWarn, func(t *testing.T, logs string) {
			if recs := records(t, logs); len(recs) != 0 || strings.Contains(logs, "authorize check") {
				t.Errorf("records at -wasm-log-level warn:\n%s", logs)
			}
		}},
		{"TextAttributes", "text", specFields, host.LogInfo, func(t *testing.T, logs string) {
			var line string
			for _, l := range strings.Split(logs, "\n") {
				if strings.Contains(l, `msg="authorize check"`) {
					line = l
				}
			}
			for _, want := range []string{"user=alice", "email=alice@example.com", "mcp-method=tools/call", "mcp-tool=search", `mcp-tool-parameters="{\"q\":\"x\"}"`, "source=wasm"} {
				if !strings.Contains(line, want) {
					t.Errorf("record line %q lacks %s\n%s", line, want, logs)
				}
			}
			if strings.Contains(logs, `msg="{`) {
				t.Errorf("a record is still a JSON string:\n%s", logs)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := startAppAt(t, c.wasm, c.format, allowAlice, c.fields, 0)
			if code, err := f.call(&http.Client{Timeout: 10 * time.Second}); err != nil || code != 200 {
				t.Fatalf("call: %d %v", code, err)
			}
			if c.wasm <= host.LogInfo {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				if _, err := f.app.live.Current().Host().WaitLog(ctx, "authorize check"); err != nil {
					t.Fatal(err)
				}
			}
			c.check(t, f.logs.String())
		})
	}
}

// scrape reads the admin /metrics and returns the samples by name, checking each has a TYPE.
func scrape(t *testing.T, f *fixture) map[string]float64 {
	t.Helper()
	srv := httptest.NewServer(f.app.live.AdminHandler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Fatalf("Content-Type %q", ct)
	}
	types, samples := map[string]string{}, map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name, typ, _ := strings.Cut(rest, " ")
			types[name] = typ
			continue
		}
		name, val, ok := strings.Cut(line, " ")
		v, err := strconv.ParseFloat(val, 64)
		if !ok || err != nil || strings.HasPrefix(line, "#") {
			t.Fatalf("bad sample line %q", line)
		}
		if family, _, _ := strings.Cut(name, "{"); types[family] == "" {
			t.Errorf("sample %s has no TYPE", name)
		}
		samples[name] = v
	}
	return samples
}

func TestLocalGateway_MetricsInPrometheusFormat(t *testing.T) {
	t.Parallel()
	f := startApp(t, "json", allowAlice, `[request-id]`, 0)
	client := &http.Client{Timeout: 10 * time.Second}
	for range 3 {
		if code, err := f.call(client); err != nil || code != 200 {
			t.Fatalf("call: %d %v", code, err)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, f.mcpURL, nil)
	if resp, err := client.Do(req); err == nil {
		resp.Body.Close()
	}
	m := scrape(t, f)
	tests := []struct {
		name string
		want float64
	}{
		{"envoy_wasmcustom_mcp_gateway_authorize_allowed", 3},
		{"envoy_wasmcustom_mcp_gateway_authorize_unauthenticated", 1},
	}
	for _, tt := range tests {
		if m[tt.name] != tt.want {
			t.Errorf("%s = %v, want %v (all: %v)", tt.name, m[tt.name], tt.want, m)
		}
	}
	// The route's own counter, its route a label as Envoy's tag extraction makes it.
	perRoute := 0.0
	for name, v := range m {
		if strings.HasPrefix(name, `envoy_wasmcustom_mcp_gateway_route_authorize_allowed{mcp_route="`) {
			perRoute += v
		}
	}
	if perRoute != 3 {
		t.Errorf("per-route allowed = %v, want 3 (all: %v)", perRoute, m)
	}
}

func TestLocalGateway_ReloadSwapsThePolicyWithoutFailingARequest(t *testing.T) {
	t.Parallel()
	f := startApp(t, "json", allowAlice, `[request-id]`, 5*time.Millisecond)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	if code, err := f.call(client); err != nil || code != 200 {
		t.Fatalf("before the reload: %d %v", code, err)
	}

	// Concurrent requests, a bounded number each, while the policy changes under them.
	const workers, each = 8, 40
	var (
		mu       sync.Mutex
		counts   = map[int]int{}
		failures []string
		wg       sync.WaitGroup
	)
	started := make(chan struct{}, workers*each)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				code, err := f.call(client)
				mu.Lock()
				counts[code]++
				if err != nil || (code != 200 && code != 403) {
					failures = append(failures, fmt.Sprintf("%d %v", code, err))
				}
				mu.Unlock()
				started <- struct{}{}
			}
		}()
	}
	for range workers * each / 4 {
		<-started
	}
	f.write(f.yaml(f.authURL, allowBobOnly, `[request-id]`))
	if err := f.app.reload(context.Background()); err != nil {
		t.Fatalf("reload: %v", err)
	}
	if code, err := f.call(client); err != nil || code != 403 {
		t.Errorf("after the reload: %d %v, want 403", code, err)
	}
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d requests failed during the reload: %v", len(failures), failures)
	}
	if counts[200] == 0 || counts[403] == 0 {
		t.Errorf("statuses %v: want both policies seen", counts)
	}

	// A bad file, or one that would move the listeners, keeps the running configuration.
	bad := []struct{ name, content, log string }{
		{"Unparsable", "routes: [\n", "configuration reload failed"},
		{"AddressesChanged", f.yaml("http://127.0.0.1:1", allowAlice, `[request-id]`), "listen addresses changed"},
	}
	for _, b := range bad {
		f.write(b.content)
		if err := f.app.reload(context.Background()); err == nil {
			t.Errorf("%s: reload succeeded", b.name)
		}
		if code, err := f.call(client); err != nil || code != 403 {
			t.Errorf("%s: after the refused reload: %d %v, want 403 (the policy in force)", b.name, code, err)
		}
		if !strings.Contains(f.logs.String(), b.log) {
			t.Errorf("%s: no log line %q", b.name, b.log)
		}
	}
	if !strings.Contains(f.logs.String(), `"msg":"configuration reloaded"`) {
		t.Error("no log line for the reload")
	}

	// The counters add up across the reload once the old gateway is retired.
	f.app.live.Wait()
	m := scrape(t, f)
	mu.Lock()
	allowed, denied := float64(counts[200]+1), float64(counts[403]+1+len(bad))
	mu.Unlock()
	if m["envoy_wasmcustom_mcp_gateway_authorize_allowed"] != allowed || m["envoy_wasmcustom_mcp_gateway_authorize_denied"] != denied {
		t.Errorf("allowed %v denied %v, want %v and %v", m["envoy_wasmcustom_mcp_gateway_authorize_allowed"], m["envoy_wasmcustom_mcp_gateway_authorize_denied"], allowed, denied)
	}
}
