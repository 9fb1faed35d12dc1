package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmesh/gateway/shared/golden"
	"github.com/mcpmesh/gateway/shared/tooldigest"
	"github.com/mcpmesh/gateway/wasmtest/toollock"
)

// The quick start's lock file (examples/demo-tools.lock.json, pinned by the "Demo MCP server
// (pinned)" route of examples/gateway.yaml) is exactly what toollock writes for this server:
// regenerate it with go test -update, or with
// go run ./wasmtest/cmd/toollock -config examples/gateway.yaml -route "Demo MCP server (pinned)"
// against the running demo server.
func TestDemoToolsLockFileIsCurrent(t *testing.T) {
	srv := newServer()
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer ts.Close()
	c := &toollock.Client{URL: ts.URL}
	server, tools, err := c.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) != 5 {
		t.Fatalf("the demo server lists %d tools, want 5", len(tools))
	}
	lock, err := tooldigest.NewLock(server, tools)
	if err != nil {
		t.Fatal(err)
	}
	golden.CheckFile(t, "../demo-tools.lock.json", lock.Marshal())
	if _, err := tooldigest.ParseLock(lock.Marshal()); err != nil {
		t.Fatalf("the lock does not read back: %v", err)
	}
}
