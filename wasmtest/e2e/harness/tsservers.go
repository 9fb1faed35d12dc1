package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TSServers is a running wasmtest/e2e/node/ts-servers.mjs: the MCP TypeScript SDK's servers
// as upstreams, with the tools echo (returns its argument "text"), drop_database and whoami.
type TSServers struct {
	// URL is http://127.0.0.1:PORT. The Streamable HTTP server (createMcpExpressApp, stateful,
	// with an event store) answers at URL+"/ts"; the legacy HTTP+SSE server at
	// URL+"/legacy/sse" (GET) and URL+"/legacy/messages?sessionId=…" (POST).
	URL  string
	proc *process
}

// TSRun is one tool run: the transport ("streamable" or "legacy"), the upstream's MCP session
// ID it ran in, the tool, its arguments, and the email (or sub) of the X-Gateway-Assertion of
// the request that carried it ("" without one).
type TSRun struct {
	Transport string         `json:"transport"`
	Session   string         `json:"session"`
	Tool      string         `json:"tool"`
	Args      map[string]any `json:"args"`
	User      string         `json:"user"`
}

// TSSession is an MCP session an upstream created, with the user of the request that opened
// it.
type TSSession struct {
	Transport string `json:"transport"`
	ID        string `json:"id"`
	User      string `json:"user"`
}

// TSRequest is an HTTP request an upstream received (logged before the SDK sees it). Session
// is its Mcp-Session-Id header or, on the legacy transport, its sessionId query parameter.
type TSRequest struct {
	Method      string `json:"method"`
	Path        string `json:"path"`
	Session     string `json:"session"`
	LastEventID string `json:"last_event_id"`
	ContentType string `json:"content_type"`
	User        string `json:"user"`
}

// TSLog is what the TypeScript servers recorded so far, oldest first.
type TSLog struct {
	Runs     []TSRun     `json:"runs"`
	Sessions []TSSession `json:"sessions"`
	Requests []TSRequest `json:"requests"`
}

// StartTSServers runs ts-servers.mjs on Node 22 on a free 127.0.0.1 port and waits until it
// serves. It is stopped when the test ends.
func StartTSServers(t testing.TB) *TSServers {
	t.Helper()
	cmd := exec.Command(Node22Bin(t), nodeScript(t, "ts-servers.mjs"))
	cmd.Dir = NodeDir(t)
	cmd.Env = childEnv()
	p, u := startProcess(t, "ts-servers", cmd, func(line string) (string, bool) {
		v, ok := strings.CutPrefix(line, "READY ")
		return strings.TrimSpace(v), ok
	}, 30*time.Second)
	if !strings.HasPrefix(u, "http://127.0.0.1:") {
		t.Fatalf("harness: ts-servers printed a bad URL %q", u)
	}
	return &TSServers{URL: u, proc: p}
}

// Log returns what the servers recorded so far.
func (s *TSServers) Log(t testing.TB) TSLog {
	t.Helper()
	l, err := s.log()
	if err != nil {
		t.Fatalf("harness: ts-servers log: %v", err)
	}
	return l
}

func (s *TSServers) log() (TSLog, error) {
	var l TSLog
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/_ran", nil)
	if err != nil {
		return l, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return l, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return l, fmt.Errorf("GET /_ran: %s", resp.Status)
	}
	return l, json.NewDecoder(resp.Body).Decode(&l)
}
