package filtertest

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/filter/plugin/plugintest"
	"github.com/mcpmesh/gateway/wasmtest/host"
	"github.com/mcpmesh/gateway/wasmtest/wasmbuild"
)

func newRedTeamHost(ctx context.Context, t *testing.T, check *CheckServer, adjust func(*host.Options)) *host.Host {
	t.Helper()
	h, err := NewHost(ctx, wasmbuild.Module(t), nil, func(o *host.Options) {
		o.PluginConfig = plugintest.RedTeamConfig()
		o.Clusters = map[string]host.Cluster{plugintest.Cluster: {Handler: check}}
		if adjust != nil {
			adjust(o)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// TestRedTeam_Wasm runs the red-team attacks against the real filter.wasm, in Envoy's default
// mode and with allow_on_headers_stop_iteration.
func TestRedTeam_Wasm(t *testing.T) {
	for _, mode := range []struct {
		name   string
		adjust func(*host.Options)
	}{
		{"EnvoyDefault", nil},
		{"HeadersStopIteration", func(o *host.Options) { o.AllowOnHeadersStopIteration = true }},
	} {
		t.Run(mode.name, func(t *testing.T) {
			for _, c := range plugintest.RedTeamCases() {
				t.Run(c.Name, func(t *testing.T) {
					plugintest.CheckRedTeam(t, c, runRedTeamCase(t, c, mode.adjust))
				})
			}
		})
	}
}

func runRedTeamCase(t *testing.T, c plugintest.RedTeamCase, adjust func(*host.Options)) plugintest.RedTeamResult {
	t.Helper()
	ctx := context.Background()
	check := &CheckServer{}
	h := newRedTeamHost(ctx, t, check, adjust)
	session := ""
	for _, b := range c.Before {
		r, err := runCase(ctx, h, check, b, nil, c.BeforeResponse)
		if err != nil {
			t.Fatal(err)
		}
		if id, ok := r.ClientResponse["mcp-session-id"]; ok {
			session = id
		}
	}
	if c.Answer != nil {
		check.answer.Store(&c.Answer)
	}
	r, err := runCase(ctx, h, check, plugintest.WithSession(c.Request, session), c.Trailers, c.Response)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestRedTeam_WasmSlowTokenServiceFailsClosed: a token service that answers after
// check_timeout_ms gets the request refused with 503 within about that time, never
// forwarded; the late answer is not cached for the next request either.
func TestRedTeam_WasmSlowTokenServiceFailsClosed(t *testing.T) {
	ctx := context.Background()
	check := &CheckServer{}
	check.delay.Store(int64(1500 * time.Millisecond))
	h := newRedTeamHost(ctx, t, check, nil)
	req := plugintest.Request{Method: "POST", Authority: "mcp.example.com", Path: "/mcp",
		Headers: [][2]string{{"content-type", "application/json"}, {"authorization", "Bearer " + plugintest.TokenAlice}},
		Chunks:  []string{`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`}}
	start := time.Now()
	r, err := RunCase(ctx, h, check, req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if elapsed := time.Since(start); r.Status != 503 || r.Forwarded || elapsed > 1400*time.Millisecond {
		t.Fatalf("status %d forwarded %v after %v; want 503 within the 500 ms check timeout", r.Status, r.Forwarded, elapsed)
	}
	time.Sleep(1200 * time.Millisecond) // the late answer arrives (and must be dropped)
	check.delay.Store(0)
	r, err = RunCase(ctx, h, check, req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.CheckCalls != 1 || !r.Forwarded {
		t.Fatalf("after the slow answer: calls %d forwarded %v; want a fresh check and the request forwarded", r.CheckCalls, r.Forwarded)
	}
}

// TestRedTeam_WasmConcurrentCallsKeepTheirOwnDecision: concurrent streams that each wait for the
// token service neither leak into each other's decisions nor hang the VM.
func TestRedTeam_WasmConcurrentCallsKeepTheirOwnDecision(t *testing.T) {
	ctx := context.Background()
	check := &CheckServer{}
	check.delay.Store(int64(50 * time.Millisecond))
	h := newRedTeamHost(ctx, t, check, func(o *host.Options) { o.Workers = 1 })
	deny := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"delete_everything"}}`
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	type out struct {
		who string
		r   plugintest.RedTeamResult
		err error
	}
	results := make(chan out, 40)
	for i := 0; i < 20; i++ {
		for _, who := range []string{plugintest.TokenAlice, plugintest.TokenBob} {
			body := list
			if i%2 == 0 {
				body = deny
			}
			go func() {
				req := plugintest.Request{Method: "POST", Authority: "mcp.example.com", Path: "/mcp",
					Headers: [][2]string{{"content-type", "application/json"}, {"authorization", "Bearer " + who}}, Chunks: []string{body}}
				r, err := RunCase(ctx, h, check, req, nil)
				if body == deny {
					who += "/deny"
				}
				results <- out{who, r, err}
			}()
		}
	}
	for i := 0; i < 40; i++ {
		o := <-results
		if o.err != nil || o.r.Stuck {
			t.Fatalf("%s: err %v stuck %v", o.who, o.err, o.r.Stuck)
		}
		// alice may list tools but not delete; bob (another domain) may do nothing.
		wantForwarded := o.who == plugintest.TokenAlice
		if o.r.Forwarded != wantForwarded || (!wantForwarded && o.r.Status != 403) {
			t.Errorf("%s: forwarded %v status %d", o.who, o.r.Forwarded, o.r.Status)
		}
		if o.r.Forwarded && !strings.HasPrefix(o.r.Upstream["x-gateway-assertion"], plugintest.AssertionForPrefix) {
			t.Errorf("%s: assertion %q", o.who, o.r.Upstream["x-gateway-assertion"])
		}
	}
}

// TestRedTeam_WasmUpstreamResponseCannotRedirectOAuthOrFixASession: what a compromised MCP
// server answers must not send the MCP client to another authorization server (a 401 with its
// own resource_metadata) nor plant the gateway's session cookie in the browser.
func TestRedTeam_WasmUpstreamResponseCannotRedirectOAuthOrFixASession(t *testing.T) {
	cases := []struct {
		name string
		resp host.Headers
		bad  func(host.Headers) bool
	}{
		{
			name: "401WithForeignResourceMetadata",
			resp: host.Headers{{Name: ":status", Value: "401"}, {Name: "www-authenticate", Value: `Bearer resource_metadata="https://evil.example/.well-known/oauth-protected-resource"`}},
			bad: func(h host.Headers) bool {
				return strings.Contains(h.Value("www-authenticate"), "evil.example")
			},
		},
		{
			name: "SetCookieOfTheGatewaySession",
			resp: host.Headers{{Name: ":status", Value: "200"}, {Name: "set-cookie", Value: "_gateway_session=attacker-session; Path=/; HttpOnly"}},
			bad: func(h host.Headers) bool {
				for _, v := range h.Values("set-cookie") {
					if strings.HasPrefix(strings.TrimSpace(v), "_gateway_") {
						return true
					}
				}
				return false
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			check := &CheckServer{}
			h := newRedTeamHost(ctx, t, check, nil)
			st, err := h.NewStream(ctx, host.StreamInfo{})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			body := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
			r, err := st.SendRequest(ctx, host.Headers{{Name: ":method", Value: "POST"}, {Name: ":path", Value: "/mcp"}, {Name: ":authority", Value: "mcp.example.com"},
				{Name: ":scheme", Value: "https"}, {Name: "content-type", Value: "application/json"}, {Name: "authorization", Value: "Bearer " + plugintest.TokenAlice},
				{Name: "content-length", Value: strconv.Itoa(len(body))}}, []byte(body))
			if err != nil || r.Reply != nil || !r.EndOfStream {
				t.Fatalf("request not forwarded: %v %+v", err, r.Reply)
			}
			resp, err := st.SendResponse(ctx, c.resp, []byte(`{}`))
			if err != nil {
				t.Fatal(err)
			}
			out := resp.Headers
			if resp.Reply != nil {
				out = append(host.Headers{{Name: ":status", Value: strconv.Itoa(resp.Reply.Status)}}, resp.Reply.Headers...)
			}
			if c.bad(out) {
				t.Fatalf("the client receives %v", out)
			}
		})
	}
}
