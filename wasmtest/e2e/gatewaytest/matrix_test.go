package gatewaytest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/mcpmesh/gateway/wasmtest/e2e/harness"
)

// matrixRow is one real client of the interoperability matrix: run signs in at url, lists the
// tools, calls echo (permitted) and delete_everything (denied), refreshes its token and calls
// echo again, and reports what it saw.
type matrixRow struct {
	name string
	run  func(t *testing.T, s *matrixStack, url string) (*harness.ClientResult, error)
	// revision, if set, is the MCP-Protocol-Version the upstream must see from this row.
	revision string
}

// TestClientMatrix: every row is a real MCP or OAuth client installed by the project's scripts
// (npm packages pinned in wasmtest/e2e/node, Go modules in go.mod), signing in through the
// local gateway over https (the development CA, as the quick start serves it) on a route whose
// from is a bare origin and on one with a path. Each completes sign-in, tools/list, a permitted
// and a denied tools/call, and a refresh; the denied call comes back as a tool result with
// isError that names the tool and the policy, never as a transport error, and the upstream
// never runs the denied tool.
func TestClientMatrix(t *testing.T) {
	s := startMatrixStack(t)
	// Node clients trust the development CA as a user of the quick start makes them.
	t.Setenv("NODE_EXTRA_CA_CERTS", s.CAFile)
	rows := []matrixRow{
		{"go-sdk-v1.8.0/2026-07-28", goSDKRow("2026-07-28"), "2026-07-28"},
		{"go-sdk-v1.8.0/2025-11-25", goSDKRow("2025-11-25"), "2025-11-25"},
		{"ts-sdk-1.32.2", func(t *testing.T, s *matrixStack, url string) (*harness.ClientResult, error) {
			return harness.RunTSClient(t, harness.ClientOptions{URL: url, Tool: "echo", Args: map[string]any{"text": "hi"}, DeniedTool: "delete_everything"})
		}, "2025-11-25"},
		{"ts-client-2.4.0/2026-07-28", func(t *testing.T, s *matrixStack, url string) (*harness.ClientResult, error) {
			return harness.RunTSClient(t, harness.ClientOptions{URL: url, Tool: "echo", Args: map[string]any{"text": "hi"}, DeniedTool: "delete_everything",
				TSClient2: true, ProtocolVersion: "2026-07-28"})
		}, "2026-07-28"},
		{"mark3labs-mcp-go-v1.2.1", func(t *testing.T, s *matrixStack, url string) (*harness.ClientResult, error) {
			return harness.RunMCPGoClient(t, harness.ClientOptions{URL: url, Tool: "echo", Args: map[string]any{"text": "hi"},
				DeniedTool: "delete_everything", HTTPClient: s.HTTPClient})
		}, "2026-07-28"},
		{"mcp-remote-0.15.1", func(t *testing.T, s *matrixStack, url string) (*harness.ClientResult, error) {
			return harness.RunMCPRemote(t, harness.ClientOptions{URL: url, Tool: "echo", Args: map[string]any{"text": "hi"},
				DeniedTool: "delete_everything", HTTPClient: s.HTTPClient})
		}, "2025-11-25"},
		{"inspector-cli-2.12.0", func(t *testing.T, s *matrixStack, url string) (*harness.ClientResult, error) {
			return harness.RunInspectorCLI(t, harness.ClientOptions{URL: url, Tool: "echo", Args: map[string]any{"text": "hi"},
				DeniedTool: "delete_everything", HTTPClient: s.HTTPClient})
		}, ""},
		{"openid-client-6", openIDClientRow, ""},
	}
	routes := []struct{ name, url string }{
		{"bare-origin", s.BareOrigin + "/mcp"},
		{"path", s.PathMCP},
	}
	ran, revisions := 0, map[string]bool{}
	for _, row := range rows {
		for _, rt := range routes {
			t.Run(row.name+"/"+rt.name, func(t *testing.T) {
				ran++
				revisions[row.revision] = true
				before := s.Upstream.Versions()
				res, err := row.run(t, s, rt.url)
				if err != nil {
					t.Fatalf("%v\nresult %+v", err, res)
				}
				checkMatrixResult(t, res)
				if after := s.Upstream.Versions(); row.revision != "" && after[row.revision] <= before[row.revision] {
					t.Errorf("the upstream saw no request on %s from this client (before %v, after %v)", row.revision, before, after)
				}
			})
		}
	}
	if n := s.Upstream.Runs("delete_everything"); n != 0 {
		t.Errorf("the upstream ran the denied tool %d times", n)
	}
	if n := s.Upstream.Runs("echo"); n < 2*ran {
		t.Errorf("the upstream ran echo %d times, want at least %d (%d rows and routes ran)", n, 2*ran, ran)
	}
	t.Logf("MCP-Protocol-Version headers the upstream received: %v", s.Upstream.Versions())
	if v := s.Upstream.Versions(); revisions["2026-07-28"] && revisions["2025-11-25"] && (v["2026-07-28"] == 0 || v["2025-11-25"] == 0) {
		t.Errorf("the upstream did not see both revisions: %v", v)
	}
}

func checkMatrixResult(t *testing.T, res *harness.ClientResult) {
	t.Helper()
	if !res.OK || !res.Refreshed {
		t.Errorf("flow not complete: ok %v refreshed %v steps %v", res.OK, res.Refreshed, res.Steps)
	}
	if !contains(res.Tools, "echo") {
		t.Errorf("tools/list %v lacks echo", res.Tools)
	}
	if contains(res.Tools, "delete_everything") {
		t.Errorf("tools/list %v shows delete_everything, which the policy denies (docs/tool-lists.md)", res.Tools)
	}
	if res.Call == nil || res.Call.IsError || !strings.Contains(callText(res.Call), "echo: hi") {
		t.Errorf("permitted call: %+v", res.Call)
	}
	if res.CallAfterRefresh == nil || res.CallAfterRefresh.IsError {
		t.Errorf("permitted call after the refresh: %+v", res.CallAfterRefresh)
	}
	if res.DeniedCallError != "" {
		t.Errorf("the denied call raised an error in the client instead of reaching the model: %s", res.DeniedCallError)
	}
	if res.DeniedCall == nil || !res.DeniedCall.IsError ||
		!strings.Contains(callText(res.DeniedCall), `does not allow the tool "delete_everything"`) ||
		!strings.Contains(callText(res.DeniedCall), "mcp-tool-unauthorized") {
		t.Errorf("denied call: %+v, want an isError result naming the tool and the reason", res.DeniedCall)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func callText(c *harness.ToolCallResult) string {
	var b strings.Builder
	for _, item := range c.Content {
		b.WriteString(item.Text)
	}
	return b.String()
}

// goSDKRow is the official Go SDK client (v1.8.0, in-process) pinned to a revision.
func goSDKRow(version string) func(*testing.T, *matrixStack, string) (*harness.ClientResult, error) {
	return func(t *testing.T, s *matrixStack, url string) (*harness.ClientResult, error) {
		return harness.RunGoClient(t, harness.ClientOptions{URL: url, Tool: "echo", Args: map[string]any{"text": "hi"},
			DeniedTool: "delete_everything", ProtocolVersion: version, HTTPClient: s.HTTPClient})
	}
}

// openIDClientRow is openid-client 6 (a strict OAuth 2.1 client, npm) sending the MCP URL as
// resource: it signs in, initializes, refreshes and initializes again; the MCP requests of the
// matrix are then made with its access token (openid-client has no MCP client of its own).
func openIDClientRow(t *testing.T, s *matrixStack, url string) (*harness.ClientResult, error) {
	browser := harness.NewBrowser()
	browser.Client.Transport = s.HTTPClient.Transport
	oc, err := harness.RunOpenIDClientWith(t, harness.OpenIDClientOptions{URL: url, Algorithm: "oauth2", RedirectURI: redirectURI, Browser: browser})
	res := &harness.ClientResult{ServerURL: url, Steps: oc.Steps, Error: oc.Error}
	if err != nil {
		return res, err
	}
	res.OK = oc.MCPStatus == 200 && oc.MCPStatusAfterRefresh == 200 && oc.ResourceSent == url
	res.Refreshed = contains(oc.Steps, "refresh")
	post := func(body string) map[string]any {
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewBufferString(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+oc.AccessToken)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		resp, err := s.HTTPClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		raw = bytes.TrimSpace(raw)
		if i := bytes.Index(raw, []byte("data: ")); i >= 0 { // an event stream
			raw = bytes.TrimSpace(raw[i+len("data: "):])
			if j := bytes.IndexByte(raw, '\n'); j >= 0 {
				raw = raw[:j]
			}
		}
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("POST %s: %d %s", url, resp.StatusCode, raw)
		}
		return m
	}
	list := post(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if r, ok := list["result"].(map[string]any); ok {
		tools, _ := r["tools"].([]any)
		for _, tl := range tools {
			if m, ok := tl.(map[string]any); ok {
				res.Tools = append(res.Tools, m["name"].(string))
			}
		}
	}
	call := func(id, tool string) *harness.ToolCallResult {
		m := post(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":{"text":"hi"}}}`)
		r, ok := m["result"].(map[string]any)
		if !ok {
			res.DeniedCallError = "no result: " + func() string { b, _ := json.Marshal(m); return string(b) }()
			return nil
		}
		out := &harness.ToolCallResult{IsError: r["isError"] == true}
		content, _ := r["content"].([]any)
		for _, c := range content {
			if cm, ok := c.(map[string]any); ok {
				text, _ := cm["text"].(string)
				out.Content = append(out.Content, harness.ContentItem{Type: "text", Text: text})
			}
		}
		return out
	}
	res.Call = call("3", "echo")
	res.DeniedCall = call("4", "delete_everything")
	res.CallAfterRefresh = call("5", "echo")
	return res, nil
}
