package gatewaytest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/tokensvc/server"
	"github.com/mcpmesh/gateway/wasmtest/e2e/harness"
	"github.com/mcpmesh/gateway/wasmtest/gateway"
	"github.com/mcpmesh/gateway/wasmtest/wasmbuild"
)

// lineBuffer collects log lines.
type lineBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lineBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lineBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// clientsStack is a gateway with two MCP server routes to the everything-server — SvcURL,
// whose policy admits only the client ci-agent (a service identity) and only the tool
// test_simple_text, and UserURL, any signed-in user — and the mcp_clients of its
// configuration.
type clientsStack struct {
	Origin, SvcURL, UserURL string
	// Secret is the secret of every confidential client of the configuration.
	Secret string
	// Logs holds the token service's and the filter's log lines (records included).
	Logs *lineBuffer
}

// startClientsStack starts a clientsStack; mcpClients is the YAML list of mcp_clients, with
// {{svc}}, {{user}} and {{secret_file}} replaced.
func startClientsStack(t *testing.T, mcpClients string) *clientsStack {
	t.Helper()
	idp := harness.StartIDP(t, harness.IDPOptions{})
	everything := harness.StartEverythingServer(t)
	authL, mcpL := listen(t, "127.0.0.1"), listen(t, "127.0.0.1")
	authURL, origin := "http://"+authL.Addr().String(), "http://"+mcpL.Addr().String()
	s := &clientsStack{Origin: origin, SvcURL: origin + "/svc", UserURL: origin + "/mcp", Secret: randomHex(), Logs: &lineBuffer{}}
	secretFile := filepath.Join(t.TempDir(), "client.secret")
	if err := os.WriteFile(secretFile, []byte(s.Secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	clients := strings.NewReplacer("{{svc}}", s.SvcURL, "{{user}}", s.UserURL, "{{secret_file}}", secretFile).Replace(mcpClients)
	yaml := fmt.Sprintf(`
runtime_flags: {mcp: true}
authenticate_service_url: %s
shared_secret: %s
cookie_secret: %s
idp_provider: oidc
idp_provider_url: %s
idp_client_id: %s
idp_client_secret: %s
authorize_log_fields: [user, email, client-id, mcp-method, mcp-tool]
storage: {type: memory}
routes:
  - name: Service route
    from: %s
    to: %s
    policy:
      allow: {and: [{client_id: {is: ci-agent}}]}
      deny: {and: [{mcp_tool: {not_in: [test_simple_text]}}]}
    mcp: {server: {}}
  - name: User route
    from: %s
    to: %s
    policy: {allow: {and: [{authenticated_user: true}]}}
    mcp: {server: {}}
mcp_clients:%s
`, authURL, randomB64(), randomB64(), idp.Issuer, idp.ClientID, idp.ClientSecret, s.SvcURL, everything, s.UserURL, everything, clients)
	cfg, err := config.Parse([]byte(yaml), nil)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	logger := slog.New(slog.NewTextHandler(s.Logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, cancel := context.WithCancel(context.Background())
	ts, err := server.New(ctx, cfg, server.WithLogger(logger))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	gw, err := gateway.New(ctx, gateway.Options{Config: cfg, Module: wasmbuild.Module(t),
		TokenService: gateway.TokenService{Public: ts.PublicHandler(), Internal: ts.InternalHandler()}, Logger: logger})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = gw.Serve(ctx, []net.Listener{authL, mcpL}) }()
	t.Cleanup(func() { cancel(); <-done; gw.Close(); ts.Close() })
	return s
}

// TestServiceIdentity_ClientCredentialsThroughTheGateway: an operator-registered confidential
// client (mcp_clients) obtains a token with grant_type=client_credentials, with no user, and
// calls its MCP server through the real filter, whose policy names it with client_id; the
// authorization record carries client-id. The token is refused at another route, and the
// client cannot obtain one for a route outside its list.
func TestServiceIdentity_ClientCredentialsThroughTheGateway(t *testing.T) {
	s := startClientsStack(t, `
  - client_id: ci-agent
    name: CI agent
    client_secret_file: {{secret_file}}
    grant_types: [client_credentials]
    routes: [{{svc}}]`)
	origin, svcURL, userURL, clientSecret, logs := s.Origin, s.SvcURL, s.UserURL, s.Secret, s.Logs

	token := func(secret string, form url.Values) (int, map[string]any) {
		form.Set("grant_type", "client_credentials")
		req, _ := http.NewRequest(http.MethodPost, origin+"/.gateway/mcp/token", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth("ci-agent", url.QueryEscape(secret)) // RFC 6749 §2.3.1: form-encoded, then Basic
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}
	status, tr := token(clientSecret, url.Values{"resource": {svcURL}})
	at, _ := tr["access_token"].(string)
	if status != 200 || at == "" || tr["scope"] != "mcp" || tr["refresh_token"] != nil {
		t.Fatalf("client_credentials: %d %v", status, tr)
	}
	if r := mcpPost(t, svcURL, at, initialize); r.StatusCode != http.StatusOK {
		t.Fatalf("initialize as the service: %d", r.StatusCode)
	}
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"test_simple_text","arguments":{}}}`
	if r := mcpPost(t, svcURL, at, call); r.StatusCode != http.StatusOK {
		t.Errorf("permitted tool call: %d", r.StatusCode)
	}
	denied := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"test_error_handling","arguments":{}}}`
	if r := mcpPost(t, svcURL, at, denied); r.StatusCode == http.StatusOK {
		if b := readAll(t, r); !strings.Contains(b, "isError") && !strings.Contains(b, "error") {
			t.Errorf("denied tool call passed: %s", b)
		}
	}
	if r := mcpPost(t, userURL, at, initialize); r.StatusCode != http.StatusUnauthorized {
		t.Errorf("service token at another route: %d", r.StatusCode)
	}
	if status, m := token(clientSecret, url.Values{"resource": {userURL}}); status != 400 || m["error"] != "invalid_target" {
		t.Errorf("route outside the client's list: %d %v", status, m)
	}
	if status, m := token("wrong-"+clientSecret, url.Values{"resource": {svcURL}}); status != 401 || m["error"] != "invalid_client" {
		t.Errorf("wrong secret: %d %v", status, m)
	}
	// The filter's record names the service and its client.
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(logs.String(), `\"client-id\":\"ci-agent\"`) && !strings.Contains(logs.String(), `"client-id":"ci-agent"`) {
		if time.Now().After(deadline) {
			t.Fatalf("no record with client-id ci-agent in:\n%s", tailString(logs.String(), 4000))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(logs.String(), `client:ci-agent`) {
		t.Errorf("no record with user client:ci-agent")
	}
	if strings.Contains(logs.String(), clientSecret) {
		t.Error("the client secret appears in the logs")
	}
}

func randomHex() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func randomB64() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)
}

func readAll(t *testing.T, r *http.Response) string {
	t.Helper()
	var b bytes.Buffer
	_, _ = b.ReadFrom(r.Body)
	return b.String()
}

func tailString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
