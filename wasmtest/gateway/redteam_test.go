package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/shared/checkapi"
	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/tokensvc/server"
	"github.com/mcpmesh/gateway/wasmtest/gateway"
	"github.com/mcpmesh/gateway/wasmtest/wasmbuild"
)

// Red-team attacks on the local gateway: raw HTTP/1.1 through the real filter.wasm, the
// token service in-process and an upstream that records what reaches it.

// seen is one request as the upstream received it.
type seen struct {
	Method, Path, Host string
	Header             http.Header
	Body               string
}

type recordingUpstream struct {
	mu   sync.Mutex
	reqs []seen
}

func (u *recordingUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	u.mu.Lock()
	u.reqs = append(u.reqs, seen{r.Method, r.URL.RequestURI(), r.Host, r.Header.Clone(), string(b)})
	u.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
}

func (u *recordingUpstream) take() []seen {
	u.mu.Lock()
	defer u.mu.Unlock()
	r := u.reqs
	u.reqs = nil
	return r
}

type redTeamGateway struct {
	mcpAddr, authAddr string
	token             string
	up                *recordingUpstream
	ts                *server.Server
}

// startRedTeamGateway serves an MCP route with the recommended policy: example.com users,
// only the tool "echo".
func startRedTeamGateway(t *testing.T) *redTeamGateway {
	t.Helper()
	g := &redTeamGateway{up: &recordingUpstream{}}
	upstream := httptest.NewServer(g.up)
	t.Cleanup(upstream.Close)
	authL, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mcpL, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	g.authAddr, g.mcpAddr = authL.Addr().String(), mcpL.Addr().String()
	cfg, err := config.Parse(fmt.Appendf(nil, `
runtime_flags: {mcp: true}
authenticate_service_url: http://%s
shared_secret: ZGVtby1vbmx5LXNoYXJlZC1zZWNyZXQtMzItYnl0ZXM=
cookie_secret: ZGVtby1vbmx5LWNvb2tpZS1zZWNyZXQtMzItYnl0ZXM=
idp_provider: oidc
idp_provider_url: http://127.0.0.1:1
idp_client_id: gw
idp_client_secret: s
storage: {type: memory}
routes:
  - from: http://%s/mcp
    to: %s/mcp
    policy:
      allow: {and: [{domain: {is: example.com}}]}
      deny: {and: [{mcp_tool: {not_in: [echo]}}]}
    mcp: {server: {}}
`, g.authAddr, g.mcpAddr, upstream.URL), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if g.ts, err = server.New(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.New(ctx, gateway.Options{Config: cfg, Module: wasmbuild.Module(t),
		TokenService: gateway.TokenService{Public: g.ts.PublicHandler(), Internal: g.ts.InternalHandler()}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = gw.Serve(ctx, []net.Listener{authL, mcpL}) }()
	t.Cleanup(func() { cancel(); <-done; gw.Close(); g.ts.Close() })
	g.token = seedToken(t, g.ts.Store())
	return g
}

// raw sends a raw HTTP/1.1 request to addr and returns the response status (0 when the
// connection was closed without one).
func raw(t *testing.T, addr, req string) int {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	// The gateway answers a denied tool call itself, with 200 and an isError result: for these
	// tests that is a refusal like any other (noDeniedCallUpstream checks the upstream).
	if resp.StatusCode == http.StatusOK && bytes.Contains(body, []byte(`"isError":true`)) && bytes.Contains(body, []byte("Denied by the MCP gateway")) {
		return http.StatusForbidden
	}
	return resp.StatusCode
}

const deniedCall = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"delete_everything"}}`

// noDeniedCallUpstream fails when a request carrying the denied tool reached the upstream.
func noDeniedCallUpstream(t *testing.T, g *redTeamGateway) {
	t.Helper()
	for _, r := range g.up.take() {
		if strings.Contains(r.Body, "delete_everything") {
			t.Fatalf("the upstream received the denied call: %s %s %q", r.Method, r.Path, r.Body)
		}
	}
}

func chunked(body string) string {
	return fmt.Sprintf("%x\r\n%s\r\n0\r\n", len(body), body)
}

func TestGateway_RedTeamRequestSmuggling(t *testing.T) {
	g := startRedTeamGateway(t)
	auth := "Authorization: Bearer " + g.token + "\r\n"
	cases := []struct {
		name string
		req  string
	}{
		{"ChunkedBodyWithTrailers", "POST /mcp HTTP/1.1\r\nHost: " + g.mcpAddr + "\r\n" + auth +
			"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\nTrailer: X-Sum\r\n\r\n" + chunked(deniedCall) + "X-Sum: 1\r\n\r\n"},
		{"ChunkedAndContentLength", "POST /mcp HTTP/1.1\r\nHost: " + g.mcpAddr + "\r\n" + auth +
			"Content-Type: application/json\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked(deniedCall) + "\r\n"},
		{"ContentLengthShorterThanTheBody", "POST /mcp HTTP/1.1\r\nHost: " + g.mcpAddr + "\r\n" + auth +
			"Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}" + "POST /mcp HTTP/1.1\r\nHost: " + g.mcpAddr + "\r\n" + auth +
			"Content-Type: application/json\r\nContent-Length: " + fmt.Sprint(len(deniedCall)) + "\r\n\r\n" + deniedCall},
		{"AbsoluteFormToTheRouteWithAnotherHostHeader", "POST http://" + g.mcpAddr + "/mcp HTTP/1.1\r\nHost: elsewhere.example.net\r\n" + auth +
			"Content-Type: application/json\r\nContent-Length: " + fmt.Sprint(len(deniedCall)) + "\r\n\r\n" + deniedCall},
		{"AbsoluteFormToAForeignHostWithTheRouteHostHeader", "POST http://elsewhere.example.net/mcp HTTP/1.1\r\nHost: " + g.mcpAddr + "\r\n" + auth +
			"Content-Type: application/json\r\nContent-Length: " + fmt.Sprint(len(deniedCall)) + "\r\n\r\n" + deniedCall},
		{"TwoHostHeaders", "POST /mcp HTTP/1.1\r\nHost: elsewhere.example.net\r\nHost: " + g.mcpAddr + "\r\n" + auth +
			"Content-Type: application/json\r\nContent-Length: " + fmt.Sprint(len(deniedCall)) + "\r\n\r\n" + deniedCall},
		{"LeadingZeroPort", "POST /mcp HTTP/1.1\r\nHost: " + strings.Replace(g.mcpAddr, ":", ":0", 1) + "\r\n" + auth +
			"Content-Type: application/json\r\nContent-Length: " + fmt.Sprint(len(deniedCall)) + "\r\n\r\n" + deniedCall},
		{"PercentEncodedRoutePath", "POST /%6dcp HTTP/1.1\r\nHost: " + g.mcpAddr + "\r\n" + auth +
			"Content-Type: application/json\r\nContent-Length: " + fmt.Sprint(len(deniedCall)) + "\r\n\r\n" + deniedCall},
		{"GatewayPathDotSegments", "POST /.gateway/../mcp HTTP/1.1\r\nHost: " + g.mcpAddr + "\r\n" + auth +
			"Content-Type: application/json\r\nContent-Length: " + fmt.Sprint(len(deniedCall)) + "\r\n\r\n" + deniedCall},
		{"FragmentInTarget", "POST /mcp#/../x HTTP/1.1\r\nHost: " + g.mcpAddr + "\r\n" + auth +
			"Content-Type: application/json\r\nContent-Length: " + fmt.Sprint(len(deniedCall)) + "\r\n\r\n" + deniedCall},
		{"ConnectionNominatesTheAssertion", "POST /mcp HTTP/1.1\r\nHost: " + g.mcpAddr + "\r\n" + auth + "Connection: keep-alive, X-Gateway-Assertion\r\n" +
			"Content-Type: application/json\r\nContent-Length: " + fmt.Sprint(len(deniedCall)) + "\r\n\r\n" + deniedCall},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status := raw(t, g.mcpAddr, c.req)
			t.Logf("status %d", status)
			if status >= 200 && status < 300 {
				t.Errorf("status %d", status)
			}
			noDeniedCallUpstream(t, g)
		})
	}
}

func TestGateway_RedTeamNonPOSTBodies(t *testing.T) {
	g := startRedTeamGateway(t)
	for _, method := range []string{"GET", "DELETE", "PUT", "post"} {
		t.Run(method, func(t *testing.T) {
			raw(t, g.mcpAddr, method+" /mcp HTTP/1.1\r\nHost: "+g.mcpAddr+"\r\nAuthorization: Bearer "+g.token+"\r\n"+
				"Content-Type: application/json\r\nContent-Length: "+fmt.Sprint(len(deniedCall))+"\r\n\r\n"+deniedCall)
			noDeniedCallUpstream(t, g)
		})
	}
}

func TestGateway_RedTeamHeadersTheUpstreamSees(t *testing.T) {
	g := startRedTeamGateway(t)
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	status := raw(t, g.mcpAddr, "POST /mcp HTTP/1.1\r\nHost: "+g.mcpAddr+"\r\n"+
		"Authorization: Bearer "+g.token+"\r\nAuthorization: Bearer second\r\n"+
		"X-Gateway-Assertion: forged-1\r\nx-gateway-assertion: forged-2\r\nX-GATEWAY-ASSERTION: forged-3\r\n"+
		"X-Forwarded-Host: evil.example\r\nX-Forwarded-Proto: https\r\nX-Forwarded-For: 10.0.0.1\r\n"+
		"Content-Type: application/json\r\nContent-Length: "+fmt.Sprint(len(list))+"\r\n\r\n"+list)
	reqs := g.up.take()
	if status != 200 || len(reqs) != 1 {
		t.Fatalf("status %d, %d upstream requests", status, len(reqs))
	}
	h := reqs[0].Header
	if v := h.Values("Authorization"); len(v) != 0 {
		t.Errorf("the upstream received Authorization %q", v)
	}
	if v := h.Values(checkapi.AssertionHeader); len(v) != 1 || strings.HasPrefix(v[0], "forged") {
		t.Errorf("assertion values %q", v)
	}
	if v := h.Get("X-Forwarded-Host"); v != g.mcpAddr {
		t.Errorf("X-Forwarded-Host %q, want the real host", v)
	}
	if v := h.Values("X-Forwarded-For"); len(v) != 1 || strings.Contains(v[0], "10.0.0.1") {
		t.Errorf("X-Forwarded-For %q carries the client's claim", v)
	}
	if v := h.Get("X-Forwarded-Proto"); v != "http" {
		t.Errorf("X-Forwarded-Proto %q", v)
	}
}

func TestGateway_RedTeamSessionCookieNeverReachesAnMCPServer(t *testing.T) {
	g := startRedTeamGateway(t)
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	raw(t, g.mcpAddr, "POST /mcp HTTP/1.1\r\nHost: "+g.mcpAddr+"\r\nAuthorization: Bearer "+g.token+"\r\n"+
		"Cookie: theme=dark; "+checkapi.SessionCookie+"=victim-session\r\n"+
		"Content-Type: application/json\r\nContent-Length: "+fmt.Sprint(len(list))+"\r\n\r\n"+list)
	for _, r := range g.up.take() {
		if strings.Contains(r.Header.Get("Cookie"), checkapi.SessionCookie) {
			t.Fatalf("the MCP server received the session cookie: %q", r.Header.Get("Cookie"))
		}
	}
}

func TestGateway_RedTeamHostsAndInternalPaths(t *testing.T) {
	g := startRedTeamGateway(t)
	_, mcpPort, _ := net.SplitHostPort(g.mcpAddr)
	get := func(addr, host, path string, hdr string) int {
		return raw(t, addr, "GET "+path+" HTTP/1.1\r\nHost: "+host+"\r\n"+hdr+"Accept: text/event-stream\r\n\r\n")
	}
	auth := "Authorization: Bearer " + g.token + "\r\n"
	cases := []struct {
		name       string
		addr, host string
		path, hdr  string
		want       int
	}{
		// The check API lives on the internal listener only: not on a route host (where the
		// path is the upstream's, behind the filter) nor on the authenticate host.
		{"CheckAPIOnARouteHostIsNoRoute", g.mcpAddr, g.mcpAddr, paths.Check, auth, 404},
		{"CheckAPIOnTheAuthenticateHost", g.authAddr, g.authAddr, paths.Check, "", 404},
		{"RouteHostOnTheAuthenticateListener", g.authAddr, g.mcpAddr, "/mcp", "", 401},
		{"RouteHostOnAnotherPortIsNotRouted", g.mcpAddr, "127.0.0.2:1", "/mcp", auth, 421},
		{"RouteHostWithUserinfo", g.mcpAddr, "user@" + g.mcpAddr, "/mcp", "", 400},
		{"RouteHostWithTrailingDot", g.mcpAddr, "127.0.0.2.:" + mcpPort, "/mcp", "", 401},
		{"UpperCaseRoutePath", g.mcpAddr, g.mcpAddr, "/MCP", auth, 400},
		{"RoutePathParameter", g.mcpAddr, g.mcpAddr, "/mcp;x=1", auth, 400},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := get(c.addr, c.host, c.path, c.hdr); got != c.want {
				t.Errorf("status %d, want %d", got, c.want)
			}
			for _, r := range g.up.take() {
				if c.want != 200 {
					t.Errorf("the upstream received %s %s (Host %s)", r.Method, r.Path, r.Host)
				}
			}
		})
	}
}

func TestGateway_RedTeamClientCannotChooseTheRequestID(t *testing.T) {
	g := startRedTeamGateway(t)
	st := raw(t, g.mcpAddr, "POST /mcp HTTP/1.1\r\nHost: "+g.mcpAddr+"\r\nAuthorization: Bearer "+g.token+"\r\n"+
		"X-Request-Id: victims-request-id\r\nContent-Type: application/json\r\nContent-Length: "+fmt.Sprint(len(deniedCall))+"\r\n\r\n"+deniedCall)
	if st != 403 {
		t.Fatalf("status %d", st)
	}
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	raw(t, g.mcpAddr, "POST /mcp HTTP/1.1\r\nHost: "+g.mcpAddr+"\r\nAuthorization: Bearer "+g.token+"\r\n"+
		"X-Request-Id: victims-request-id\r\nContent-Type: application/json\r\nContent-Length: "+fmt.Sprint(len(list))+"\r\n\r\n"+list)
	reqs := g.up.take()
	if len(reqs) != 1 {
		t.Fatalf("%d upstream requests", len(reqs))
	}
	if id := reqs[0].Header.Get("X-Request-Id"); id == "" || id == "victims-request-id" {
		t.Errorf("upstream X-Request-Id %q: want the gateway's own", id)
	}
}
