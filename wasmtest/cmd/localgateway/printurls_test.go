package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/mcpmesh/gateway/shared/config"
)

// TestWriteURLs: every line ends with its URL and the URLs start in one column, however long
// a route's name.
func TestWriteURLs(t *testing.T) {
	t.Parallel()
	cfg := &config.Config{AuthenticateServiceURL: "http://127.0.0.1:8400", Routes: []config.Route{
		{Name: "Short", From: "https://a.example/mcp", MCP: &config.MCP{Server: &config.MCPServer{}}},
		{Name: "A rather long route name that is wider than the default column", From: "https://b.example/mcp", MCP: &config.MCP{Server: &config.MCPServer{}}},
		{From: "http://c.example"},
	}}
	var b bytes.Buffer
	writeURLs(&b, cfg)
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	want := []string{"http://127.0.0.1:8400", "https://a.example/mcp", "https://b.example/mcp", "http://c.example"}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), b.String())
	}
	col := strings.Index(lines[0], want[0])
	for i, l := range lines {
		if !strings.HasSuffix(l, " "+want[i]) || strings.Index(l, want[i]) != col {
			t.Errorf("line %d %q: want URL %q at column %d", i, l, want[i], col)
		}
	}
	if !strings.HasPrefix(lines[3], "route ") || !strings.Contains(lines[3], " - ") {
		t.Errorf("unnamed plain route printed as %q", lines[3])
	}
}
