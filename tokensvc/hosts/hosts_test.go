package hosts

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/mcpmesh/gateway/shared/config"
)

func TestTable_Lookup(t *testing.T) {
	t.Parallel()
	c := &config.Config{
		AuthenticateServiceURL: "https://auth.example.com",
		Routes: []config.Route{
			{From: "https://mcp.example.com/mcp"},
			{From: "https://mcp.example.com/other"},
			{From: "http://127.0.0.2:8401/mcp"},
		},
	}
	tb := NewTable(c)
	cases := map[string]string{
		"mcp.example.com":      "https://mcp.example.com",
		"MCP.Example.COM.":     "https://mcp.example.com",
		"mcp.example.com:443":  "https://mcp.example.com",
		"mcp.example.com:80":   "", // not the https host's default port
		"mcp.example.com:8443": "",
		"auth.example.com":     "https://auth.example.com",
		"127.0.0.2:8401":       "http://127.0.0.2:8401",
		"127.0.0.2":            "",
		"evil.example.com":     "",
		"":                     "",
	}
	for in, want := range cases {
		h := tb.Lookup(in)
		got := ""
		if h != nil {
			got = h.Origin
		}
		if got != want {
			t.Errorf("Lookup(%q) = %q, want %q", in, got, want)
		}
	}
	if h := tb.Lookup("mcp.example.com"); len(h.Routes) != 2 || len(h.ServerRoutes()) != 0 || h.Authenticate {
		t.Errorf("routes of mcp.example.com = %d (server %d), authenticate %v", len(h.Routes), len(h.ServerRoutes()), h.Authenticate)
	}
}

func TestMiddleware_UnknownHostIs421(t *testing.T) {
	t.Parallel()
	tb := NewTable(&config.Config{AuthenticateServiceURL: "https://auth.example.com"})
	reached := false
	h := tb.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached = true
		if got, ok := FromContext(r.Context()); !ok || got.Origin != "https://auth.example.com" {
			t.Errorf("host in context = %+v", got)
		}
	}))
	for host, want := range map[string]int{"evil.example.com": 421, "auth.example.com": 200} {
		reached = false
		rec := httptest.NewRecorder()
		r := httptest.NewRequest("GET", "/", nil)
		r.Host = host
		h.ServeHTTP(rec, r)
		if rec.Code != want || reached != (want == 200) {
			t.Errorf("%s: status %d reached %v", host, rec.Code, reached)
		}
	}
}
