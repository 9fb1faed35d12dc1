package gatewaytest

import (
	"strings"
	"testing"

	"github.com/mcpmesh/gateway/wasmtest/e2e/harness"
)

// TestMCPRemote_RefusesAPlainHTTPTokenEndpointOffTheExemptNames is why the quick start's MCP
// route is https (docs/clients.md#tls): mcp-remote signs in at a plain-http route on
// 127.0.0.4 and then refuses to send the code to its token endpoint
// (InsecureTokenEndpointError); only localhost, 127.0.0.1 and ::1 are exempt. TestClientMatrix
// shows the same client completing over https.
func TestMCPRemote_RefusesAPlainHTTPTokenEndpointOffTheExemptNames(t *testing.T) {
	s := startStackWith(t, stackOptions{BareOrigin: true})
	res, err := harness.RunMCPRemote(t, harness.ClientOptions{URL: s.BareURL + "/mcp", Tool: "test_simple_text", Args: map[string]any{}})
	if err == nil {
		t.Fatalf("mcp-remote completed over plain http on 127.0.0.4: %+v", res)
	}
	t.Logf("mcp-remote: %v", err)
	if !strings.Contains(err.Error(), "InsecureTokenEndpoint") && !strings.Contains(strings.ToLower(err.Error()), "insecure") {
		t.Fatalf("mcp-remote failed otherwise than by refusing the token endpoint: %v", err)
	}
}
