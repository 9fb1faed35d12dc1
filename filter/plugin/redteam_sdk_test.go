package plugin_test

import (
	"context"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/mcpmesh/gateway/filter/plugin/plugintest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sdkUpstream is the MCP Go SDK's streamable HTTP server (the conformance everything-server
// is built on it) with the allowed tools and a denied one; it records every tool it runs.
type sdkUpstream struct {
	handler http.Handler
	mu      sync.Mutex
	ran     []string
}

func newSDKUpstream() *sdkUpstream {
	u := &sdkUpstream{}
	s := mcp.NewServer(&mcp.Implementation{Name: "redteam", Version: "1"}, nil)
	for _, name := range []string{"echo", "add", "delete_everything", "Echo", "echo "} {
		s.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}},
			func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				u.mu.Lock()
				u.ran = append(u.ran, req.Params.Name)
				u.mu.Unlock()
				return &mcp.CallToolResult{}, nil
			})
	}
	u.handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	return u
}

// serve sends body to the SDK as the gateway would forward it and returns the tools it ran.
func (u *sdkUpstream) serve(body string) []string {
	u.mu.Lock()
	u.ran = nil
	u.mu.Unlock()
	r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	u.handler.ServeHTTP(httptest.NewRecorder(), r)
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.ran...)
}

// sdkSeeds are bodies that try to make the filter and the SDK read different tools.
func sdkSeeds() []string {
	call := func(members string) string { return `{"jsonrpc":"2.0","id":1,` + members + `}` }
	return []string{
		call(`"method":"tools/call","params":{"name":"echo"}`),
		call(`"method":"tools/call","params":{"name":"delete_everything"}`),
		call(`"method":"tools\u002fcall","params":{"n\u0061me":"delete_everything"}`),
		call(`"method":"tools/call","params":{"name":"echo","name":"delete_everything"}`),
		call(`"method":"tools/call","params":{"name":"echo","Name":"delete_everything"}`),
		call(`"method":"tools/call","params":{"name":"echo","NAME":"delete_everything"}`),
		call(`"method":"tools/call","params":{"name":"echo"},"Params":{"name":"delete_everything"}`),
		call(`"method":"tools/call","params":{"name":"echo"},"param\u017f":{"name":"delete_everything"}`),
		call(`"method":"tools/list","Method":"tools/call","params":{"name":"delete_everything"}`),
		call(`"method":"tools/list","method":"tools/call","params":{"name":"delete_everything"}`),
		call(`"method":"tools/call","params":{"name":"echo","_meta":{"name":"delete_everything"}}`),
		call(`"method":"tools/call","params":{"arguments":{"name":"delete_everything"},"name":"echo"}`),
		call(`"method":"tools/call","params":{"name":"Echo"}`),
		call(`"method":"tools/call","params":{"name":"echo "}`),
		call(`"method":"tools/call","params":{"name":"echo\u0000"}`),
		call(`"method":"tools/call","params":{"name":"delete_everything"},"result":{}`),
		call(`"method":null,"params":{"name":"delete_everything"}`),
		call(`"method":"","params":{"name":"delete_everything"}`),
		call(`"method":"tools/call ","params":{"name":"delete_everything"}`),
		call(`"method":"TOOLS/CALL","params":{"name":"delete_everything"}`),
		`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"delete_everything"}}`,
		`{"jsonrpc":"2.0","ıd":1,"method":"tools/call","params":{"name":"delete_everything"}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"delete_everything"}}]`,
		" \t\r\n" + call(`"method":"tools/call","params":{"name":"delete_everything"}`) + " \n",
		"\xef\xbb\xbf" + call(`"method":"tools/call","params":{"name":"delete_everything"}`),
		call(`"method":"tools/call","params":{"name":"echo"}`) + call(`"method":"tools/call","params":{"name":"delete_everything"}`),
		call(`"method":"tools/call","params":{"name":"del\ud800ete_everything"}`),
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"delete_everything\xff\"}}",
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"na\xffme\":\"delete_everything\",\"name\":\"echo\"}}",
		call(`"method":"tools/call","params":{"name":"echo","name\u0000":"delete_everything"}`),
		call(`"method":"tools/call","params":{"name":"echo"},"params\u0000":{"name":"delete_everything"}`),
	}
}

// mutate returns a variant of s: a byte inserted, deleted, replaced or duplicated, chosen
// from the bytes that change how JSON parsers read keys and strings.
func mutate(rng *rand.Rand, s string) string {
	interesting := []string{`"`, `\`, `\u0000`, `\u00`, `,`, `:`, `{`, `}`, `[`, `]`, " ", "\t", "\x00", "\xff", "\xc0",
		`\u017f`, `\u212a`, "N", "n", "M", "P", "I", `"name":"delete_everything",`, `"params":{"name":"delete_everything"},`, "/", `\/`}
	if s == "" {
		return interesting[rng.IntN(len(interesting))]
	}
	i := rng.IntN(len(s))
	switch rng.IntN(4) {
	case 0:
		return s[:i] + interesting[rng.IntN(len(interesting))] + s[i:]
	case 1:
		return s[:i] + s[i+1:]
	case 2:
		return s[:i] + interesting[rng.IntN(len(interesting))] + s[i+1:]
	}
	j := i + rng.IntN(len(s)-i)
	return s[:j] + s[i:j] + s[j:]
}

// TestRedTeam_SDKRunsOnlyWhatTheFilterAllowed sends each body through the filter (the
// recommended policy: only echo and add) and, when the filter forwards it, to the MCP Go SDK
// server: the SDK must never run a tool the filter did not see and allow. The seeds are
// known smuggling shapes; the mutants are deterministic single and double edits of them.
func TestRedTeam_SDKRunsOnlyWhatTheFilterAllowed(t *testing.T) {
	t.Parallel()
	up := newSDKUpstream()
	nf, err := plugintest.NewNativeFilter()
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	bodies := sdkSeeds()
	for _, s := range sdkSeeds() {
		for k := 0; k < 400; k++ {
			m := mutate(rng, s)
			if k%3 == 0 {
				m = mutate(rng, m)
			}
			bodies = append(bodies, m)
		}
	}
	forwarded, ran := 0, 0
	for _, body := range bodies {
		r := nf.Run(plugintest.Request{Method: "POST", Authority: "mcp.example.com", Path: "/mcp",
			Headers: [][2]string{{"content-type", "application/json"}, {"authorization", "Bearer " + plugintest.TokenAlice}},
			Chunks:  []string{body}})
		if !r.Forwarded {
			continue
		}
		forwarded++
		logs := strings.Join(r.Logs, "\n")
		for _, tool := range up.serve(body) {
			ran++
			if tool != "echo" && tool != "add" {
				t.Errorf("the SDK ran %q, which the policy denies; body %q", tool, body)
			}
			if !strings.Contains(logs, `"mcp-tool":"`+tool+`"`) {
				t.Errorf("the SDK ran %q, which the filter did not see; body %q\nlog %s", tool, body, logs)
			}
		}
	}
	t.Logf("%d bodies, %d forwarded, %d tool runs", len(bodies), forwarded, ran)
	if ran == 0 {
		t.Fatal("no tool ever ran: the differential proves nothing")
	}
}
