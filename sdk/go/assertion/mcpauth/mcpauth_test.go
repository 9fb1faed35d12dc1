package mcpauth

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmesh/gateway/sdk/go/assertion"
)

// headerTransport adds headers to every request.
type headerTransport struct{ headers http.Header }

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, vs := range h.headers {
		for _, v := range vs {
			r.Header.Add(k, v)
		}
	}
	return http.DefaultTransport.RoundTrip(r)
}

func TestHandler_ToolSeesTheCallersIdentity(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "vectors.json"))
	if err != nil {
		t.Fatal(err)
	}
	var vec struct {
		Issuer, Audience string
		Now              int64
		JWKS             json.RawMessage
		Cases            []struct{ Name, Token string }
	}
	if err := json.Unmarshal(raw, &vec); err != nil {
		t.Fatal(err)
	}
	tokens := map[string]string{}
	for _, c := range vec.Cases {
		tokens[c.Name] = c.Token
	}
	jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(vec.JWKS) }))
	defer jwks.Close()
	v, err := assertion.NewVerifier(assertion.Config{JWKSURL: jwks.URL, Issuer: vec.Issuer, Audience: vec.Audience,
		Now: func() time.Time { return time.Unix(vec.Now, 0) }})
	if err != nil {
		t.Fatal(err)
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "whoami", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{Name: "whoami", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			id := IdentityFromRequest(req)
			if id == nil {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no identity"}}}, nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: id.Email + " " + strings.Join(id.Groups, ",")}}}, nil
		})
	authSeen := make(chan string, 16)
	sdkHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	srv := httptest.NewServer(Handler(v, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case authSeen <- r.Header.Get("Authorization"):
		default:
		}
		sdkHandler.ServeHTTP(w, r)
	})))
	defer srv.Close()

	connect := func(h http.Header) (*mcp.ClientSession, error) {
		c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
		return c.Connect(context.Background(), &mcp.StreamableClientTransport{
			Endpoint: srv.URL, HTTPClient: &http.Client{Transport: headerTransport{h}}, MaxRetries: -1,
		}, nil)
	}

	t.Run("valid assertion", func(t *testing.T) {
		s, err := connect(http.Header{assertion.HeaderName: {tokens["valid"]}, "Authorization": {"Basic client-own"}})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: "whoami"})
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Content[0].(*mcp.TextContent).Text; res.IsError || got != "alice@example.com admins,staff" {
			t.Fatalf("whoami = %q (error %v)", got, res.IsError)
		}
		if got := <-authSeen; got != "Basic client-own" {
			t.Errorf("the MCP handler saw Authorization %q, want the client's", got)
		}
	})
	for _, tt := range []struct {
		name    string
		headers http.Header
	}{
		{"no assertion", http.Header{}},
		{"expired assertion", http.Header{assertion.HeaderName: {tokens["expired"]}}},
		{"two assertions", http.Header{assertion.HeaderName: {tokens["valid"], tokens["valid"]}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := connect(tt.headers)
			if err == nil {
				s.Close()
				t.Fatal("connected")
			}
			if !strings.Contains(err.Error(), "Unauthorized") && !strings.Contains(err.Error(), "401") {
				t.Fatalf("%v, want a 401", err)
			}
		})
	}
}
