package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestUpstreamWhoami_NamesTheAccountNeverTheToken(t *testing.T) {
	userinfo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer ti-of-alice" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"sub":"alice-upstream","email":"alice@upstream.example","name":"Alice"}`))
	}))
	defer userinfo.Close()
	client := &http.Client{Timeout: 5 * time.Second}
	for _, tt := range []struct {
		name, authorization, want string
		isError                   bool
	}{
		{"the TI", "Bearer ti-of-alice", `"upstream_sub":"alice-upstream"`, false},
		{"no token", "", "no upstream token", true},
		{"another token", "Bearer the-te", "refused the forwarded token", true},
		{"not bearer", "Basic dTpw", "no upstream token", true},
	} {
		res := upstreamWhoami(context.Background(), client, userinfo.URL, tt.authorization)
		got := res.Content[0].(*mcp.TextContent).Text
		if res.IsError != tt.isError || !strings.Contains(got, tt.want) {
			t.Errorf("%s: %v %q, want %v %q", tt.name, res.IsError, got, tt.isError, tt.want)
		}
		if strings.Contains(got, "ti-of-alice") || strings.Contains(got, "the-te") {
			t.Errorf("%s: the answer shows the token: %q", tt.name, got)
		}
	}
}
