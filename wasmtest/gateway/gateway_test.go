package gateway_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/tokensvc/secret"
	"github.com/mcpmesh/gateway/tokensvc/server"
	"github.com/mcpmesh/gateway/tokensvc/store"
	"github.com/mcpmesh/gateway/wasmtest/gateway"
	"github.com/mcpmesh/gateway/wasmtest/wasmbuild"
)

// startGateway serves a gateway whose single MCP route points at upstream; adjust, if given,
// changes its options.
func startGateway(t *testing.T, upstream string, adjust ...func(*gateway.Options)) (mcpURL, authURL string, ts *server.Server) {
	t.Helper()
	authL, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mcpL, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	authURL, mcpURL = "http://"+authL.Addr().String(), "http://"+mcpL.Addr().String()+"/mcp"
	cfg, err := config.Parse(fmt.Appendf(nil, `
runtime_flags: {mcp: true}
authenticate_service_url: %s
shared_secret: ZGVtby1vbmx5LXNoYXJlZC1zZWNyZXQtMzItYnl0ZXM=
cookie_secret: ZGVtby1vbmx5LWNvb2tpZS1zZWNyZXQtMzItYnl0ZXM=
idp_provider: oidc
idp_provider_url: http://127.0.0.1:1
idp_client_id: gw
idp_client_secret: s
storage: {type: memory}
routes:
  - from: %s
    to: %s
    policy: {allow: {and: [{authenticated_user: true}]}}
    mcp: {server: {}}
`, authURL, mcpURL, upstream), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ts, err = server.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	o := gateway.Options{Config: cfg, Module: wasmbuild.Module(t),
		TokenService: gateway.TokenService{Public: ts.PublicHandler(), Internal: ts.InternalHandler()}}
	for _, f := range adjust {
		f(&o)
	}
	gw, err := gateway.New(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = gw.Serve(ctx, []net.Listener{authL, mcpL}) }()
	t.Cleanup(func() { cancel(); <-done; gw.Close(); ts.Close() })
	return mcpURL, authURL, ts
}

// seedToken stores a live session and an External Token valid at every route.
func seedToken(t *testing.T, st store.Store) string {
	t.Helper()
	ctx, now := context.Background(), time.Now()
	s := store.Session{ID: secret.NewToken(), Subject: "alice", Email: "alice@example.com", Claims: []byte(`{"sub":"alice"}`), CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	if err := st.CreateSession(ctx, s); err != nil {
		t.Fatal(err)
	}
	tok := secret.NewToken()
	if err := st.CreateAccessToken(ctx, store.AccessToken{Hash: secret.Hash(tok), ClientID: "c", SessionID: s.ID, Subject: "alice", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestGateway_RoutesAndFailures(t *testing.T) {
	// An upstream that is down: a closed port.
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	down := "http://" + l.Addr().String() + "/mcp"
	l.Close()
	mcpURL, authURL, ts := startGateway(t, down)
	client := &http.Client{Timeout: 10 * time.Second}

	get := func(url, host string, hdr ...string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if host != "" {
			req.Host = host
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}

	t.Run("MissingTokenIs401FromTheFilter", func(t *testing.T) {
		resp, _ := get(mcpURL, "")
		if resp.StatusCode != 401 || !strings.Contains(resp.Header.Get("WWW-Authenticate"), "resource_metadata=") {
			t.Fatalf("%d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	})
	t.Run("UnknownHostIs421", func(t *testing.T) {
		resp, body := get(mcpURL, "evil.example.com")
		if resp.StatusCode != http.StatusMisdirectedRequest || !strings.Contains(body, "misdirected") {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
	})
	t.Run("GatewayPathsReachTheTokenService", func(t *testing.T) {
		resp, body := get(strings.TrimSuffix(mcpURL, "/mcp")+"/.well-known/oauth-protected-resource/mcp", "")
		if resp.StatusCode != 200 || !strings.Contains(body, `"resource":"`+mcpURL+`"`) {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
		resp, _ = get(authURL+"/healthz", "")
		if resp.StatusCode != 200 {
			t.Fatalf("authenticate host /healthz: %d", resp.StatusCode)
		}
	})
	t.Run("UpstreamDownIs502WithABodyNotAHang", func(t *testing.T) {
		resp, body := get(mcpURL, "", "Authorization", "Bearer "+seedToken(t, ts.Store()), "Accept", "text/event-stream")
		if resp.StatusCode != http.StatusBadGateway || !strings.Contains(body, "unreachable") {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
	})
	t.Run("UnreachableIdentityProviderIsAnErrorPageNotAHang", func(t *testing.T) {
		// The token service fails closed too when sign-in cannot reach the provider.
		resp, _ := get(authURL+"/.gateway/authenticate/sign_in", "")
		if resp.StatusCode < 400 {
			t.Fatalf("status %d", resp.StatusCode)
		}
	})
}

// An event stream reaches the client event by event: the upstream sends its second event
// only once the client has read the first, for a POST answered with a stream (MCP streamable
// HTTP) and for the event-stream GET.
func TestGateway_EventStreamsFlowEventByEvent(t *testing.T) {
	t.Parallel()
	next := make(chan struct{}, 2)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	up := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"n\":1}}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-next:
		case <-time.After(5 * time.Second):
			return // the client never saw the first event
		}
		io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[]}}\n\n")
	})}
	go up.Serve(l)
	t.Cleanup(func() { up.Close() })
	mcpURL, _, ts := startGateway(t, "http://"+l.Addr().String()+"/mcp")
	token := seedToken(t, ts.Store())
	for _, method := range []string{http.MethodPost, http.MethodGet} {
		var body io.Reader
		if method == http.MethodPost {
			body = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`)
		}
		req, _ := http.NewRequest(method, mcpURL, body)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Content-Type", "application/json")
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		rd := bufio.NewReader(resp.Body)
		var first string
		for !strings.HasSuffix(first, "\n\n") {
			line, err := rd.ReadString('\n')
			if err != nil {
				t.Fatalf("%s: first event %q: %v (status %d)", method, first, err, resp.StatusCode)
			}
			first += line
		}
		if !strings.Contains(first, `"n":1`) {
			t.Fatalf("%s: first event %q", method, first)
		}
		next <- struct{}{}
		rest, err := io.ReadAll(rd)
		resp.Body.Close()
		if err != nil || !strings.Contains(string(rest), `"id":1`) {
			t.Fatalf("%s: rest %q, %v", method, rest, err)
		}
	}
}
