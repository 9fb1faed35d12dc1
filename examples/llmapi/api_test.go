package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestAllowlist_MatchesOriginsExactly(t *testing.T) {
	al, err := newAllowlist([]string{"http://127.0.0.2:8401", "HTTPS://MCP.Example.com"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		url  string
		want bool
	}{
		{"http://127.0.0.2:8401/mcp", true},
		{"http://127.0.0.2:8401/other/path?q=1", true},
		{"https://mcp.example.com/mcp", true},
		{"https://mcp.example.com:443/mcp", true},
		{"https://MCP.EXAMPLE.COM/mcp", true},
		{"http://mcp.example.com/mcp", false},       // another scheme
		{"https://mcp.example.com:8443/mcp", false}, // another port
		{"http://127.0.0.2:8402/mcp", false},
		{"http://127.0.0.2/mcp", false},
		{"https://mcp.example.com.evil.com/mcp", false},
		{"https://evil.com/mcp.example.com", false},
		{"https://mcp.example.com@evil.com/mcp", false},
		{"https://user@mcp.example.com/mcp", false},
		{"ftp://mcp.example.com/mcp", false},
		{"https://xn--mcp-example.com/mcp", false},
	} {
		u, err := url.Parse(tt.url)
		if err != nil {
			t.Fatalf("%s: %v", tt.url, err)
		}
		if got := al.allows(u); got != tt.want {
			t.Errorf("allows(%s) = %v, want %v", tt.url, got, tt.want)
		}
	}
}

func TestNewAllowlist_RefusesWhatIsNotAnOrigin(t *testing.T) {
	for _, o := range [][]string{nil, {"127.0.0.2:8401"}, {"http://h/path"}, {"http://h?q"}, {"http://u@h"}, {"ftp://h"}, {"http://"}} {
		if _, err := newAllowlist(o); err == nil {
			t.Errorf("newAllowlist(%q) accepted", o)
		}
	}
}

// mcpServer is an MCP server (the Go SDK's) with an echo tool that records the Authorization
// header of every request.
func mcpServer(t *testing.T, auths *[]string) *httptest.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, a struct {
		Text string `json:"text"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text}}}, nil, nil
	})
	// What the gateway answers in the tool's place when its policy denies a tools/call.
	mcp.AddTool(s, &mcp.Tool{Name: "denied"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "Denied by the MCP gateway"}},
			Meta: mcp.Meta{deniedMetaKey: map[string]any{"tool": "denied"}}}, nil, nil
	})
	// A tool's own error.
	mcp.AddTool(s, &mcp.Tool{Name: "fails"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "disk full"}}}, nil, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*auths = append(*auths, r.Header.Get("Authorization"))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func post(t *testing.T, h http.Handler, auth, body string) (int, callResult) {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/v1/tool-call", strings.NewReader(body))
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var res callResult
	if err := json.Unmarshal(rec.Body.Bytes(), &res); err != nil {
		t.Fatalf("answer %q: %v", rec.Body.String(), err)
	}
	return rec.Code, res
}

func TestToolCall_SendsTheTokenToAnAllowedServer(t *testing.T) {
	var auths []string
	srv := mcpServer(t, &auths)
	al, _ := newAllowlist([]string{srv.URL})
	a := &api{allow: al, timeout: 10 * time.Second, logf: t.Logf}
	code, res := post(t, a.routes(), "Bearer the-te", `{"server_url":"`+srv.URL+`/mcp","tool":"echo","arguments":{"text":"hi"}}`)
	if code != 200 || !res.OK || res.IsError || res.Text != "hi" {
		t.Fatalf("answer %d %+v, want the result hi", code, res)
	}
	if _, res := post(t, a.routes(), "Bearer the-te", `{"server_url":"`+srv.URL+`/mcp","tool":"denied"}`); !res.OK || !res.IsError || !res.Denied {
		t.Errorf("the gateway's denial result: %+v, want denied", res)
	}
	if _, res := post(t, a.routes(), "Bearer the-te", `{"server_url":"`+srv.URL+`/mcp","tool":"fails"}`); !res.OK || !res.IsError || res.Denied || res.Text != "disk full" {
		t.Errorf("the tool's own error: %+v, want an error result, not a denial", res)
	}
	if len(auths) == 0 {
		t.Fatal("the server got no request")
	}
	for _, h := range auths {
		if h != "Bearer the-te" {
			t.Errorf("the server got Authorization %q", h)
		}
	}
}

func TestToolCall_RefusesBeforeSendingAnything(t *testing.T) {
	var hits atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer other.Close()
	al, _ := newAllowlist([]string{"http://127.0.0.2:8401"})
	a := &api{allow: al, timeout: 5 * time.Second, logf: t.Logf}
	for _, tt := range []struct{ name, auth, body string }{
		{"origin not allowed", "Bearer te", `{"server_url":"` + other.URL + `/mcp","tool":"echo"}`},
		{"no token", "", `{"server_url":"http://127.0.0.2:8401/mcp","tool":"echo"}`},
		{"basic auth", "Basic dTpw", `{"server_url":"http://127.0.0.2:8401/mcp","tool":"echo"}`},
		{"relative URL", "Bearer te", `{"server_url":"/mcp","tool":"echo"}`},
		{"no tool", "Bearer te", `{"server_url":"http://127.0.0.2:8401/mcp"}`},
		{"arguments not an object", "Bearer te", `{"server_url":"http://127.0.0.2:8401/mcp","tool":"echo","arguments":[1]}`},
		{"unknown field", "Bearer te", `{"server_url":"http://127.0.0.2:8401/mcp","tool":"echo","x":1}`},
		{"trailing data", "Bearer te", `{"server_url":"http://127.0.0.2:8401/mcp","tool":"echo"} {}`},
		{"too large", "Bearer te", `{"server_url":"http://127.0.0.2:8401/mcp","tool":"echo","arguments":{"t":"` + strings.Repeat("a", maxRequestBody) + `"}}`},
	} {
		code, res := post(t, a.routes(), tt.auth, tt.body)
		if code < 400 || res.OK || res.Error == "" {
			t.Errorf("%s: answer %d %+v, want a refusal", tt.name, code, res)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the other server got %d requests", n)
	}
}

func TestToolCall_FollowsNoRedirect(t *testing.T) {
	var hits atomic.Int32
	var leaked atomic.Value
	target := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		leaked.Store(r.Header.Get("Authorization"))
	}))
	defer target.Close()
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/mcp", http.StatusTemporaryRedirect)
	}))
	defer redirector.Close()
	al, _ := newAllowlist([]string{redirector.URL, target.URL})
	a := &api{allow: al, timeout: 5 * time.Second, logf: t.Logf}
	_, res := post(t, a.routes(), "Bearer te", `{"server_url":"`+redirector.URL+`/mcp","tool":"echo"}`)
	if res.OK {
		t.Fatalf("a redirect answered as a result: %+v", res)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the redirect was followed (%d requests, Authorization %v)", n, leaked.Load())
	}
}

func TestToolCall_ReportsTheGatewaysRefusal(t *testing.T) {
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		w.Write([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32003,"message":"Forbidden: the gateway policy does not allow the tool \"x\""}}`))
	}))
	defer gw.Close()
	al, _ := newAllowlist([]string{gw.URL})
	a := &api{allow: al, timeout: 5 * time.Second, logf: t.Logf}
	_, res := post(t, a.routes(), "Bearer te", `{"server_url":"`+gw.URL+`/mcp","tool":"x"}`)
	if res.OK || !res.Denied || res.GatewayStatus != http.StatusForbidden || !strings.Contains(res.GatewayBody, "does not allow the tool") {
		t.Fatalf("answer %+v, want the 403 and its body", res)
	}
}

func FuzzParseCallRequest(f *testing.F) {
	f.Add([]byte(`{"server_url":"http://127.0.0.2:8401/mcp","tool":"echo","arguments":{"text":"x"}}`))
	f.Add([]byte(`{"server_url":"http://127.0.0.2:8401@evil/mcp","tool":"echo"}`))
	f.Add([]byte(`{"server_url":"HTTP://127.0.0.2:8401","tool":"e","arguments":null}`))
	al, _ := newAllowlist([]string{"http://127.0.0.2:8401"})
	f.Fuzz(func(t *testing.T, body []byte) {
		req, u, err := parseCallRequest(body, al)
		if err != nil {
			return
		}
		// Whatever is accepted is on the allowed origin, with a tool name in bounds.
		if got, _ := originOf(u); got != "http://127.0.0.2:8401" || u.User != nil {
			t.Fatalf("accepted %q on origin %q", req.ServerURL, got)
		}
		if req.Tool == "" || len(req.Tool) > maxToolName {
			t.Fatalf("accepted tool %q", req.Tool)
		}
	})
}
