package gatewaytest

import (
	"strings"
	"testing"

	"github.com/mcpmesh/gateway/wasmtest/e2e/harness"
)

// TestPreRegisteredClient_OfficialSDKs: the official TypeScript and Go SDK clients use clients
// the operator registered in mcp_clients (no dynamic registration): a confidential one with
// its secret from a file, behind the consent page, and a public native one without it. Both
// sign in, call a tool and refresh; a client limited to one route cannot get a token for
// another.
func TestPreRegisteredClient_OfficialSDKs(t *testing.T) {
	s := startClientsStack(t, `
  - client_id: ts-portal
    name: TS portal
    client_secret_file: {{secret_file}}
    redirect_uris: [http://127.0.0.1/callback]
    routes: [{{user}}]
    consent: true
  - client_id: go-desktop
    application_type: native
    redirect_uris: [http://127.0.0.1/callback]
    routes: [{{user}}]`)

	t.Run("TypeScript SDK, confidential", func(t *testing.T) {
		res, err := harness.RunTSClient(t, harness.ClientOptions{URL: s.UserURL, Tool: "test_simple_text", ClientID: "ts-portal", ClientSecret: s.Secret})
		if err != nil {
			t.Fatalf("%v\nbrowser: %v", err, res.Browser)
		}
		if res.Registered || res.ClientID != "ts-portal" || !res.Refreshed || res.Call == nil || res.Call.IsError || res.Scope != "mcp" {
			t.Fatalf("result %+v", res)
		}
	})
	t.Run("Go SDK, public without consent", func(t *testing.T) {
		res, err := harness.RunGoClient(t, harness.ClientOptions{URL: s.UserURL, Tool: "test_simple_text", ClientID: "go-desktop"})
		if err != nil {
			t.Fatalf("%v\nbrowser: %v", err, res.Browser)
		}
		if !res.Refreshed || res.Call == nil || res.Call.IsError {
			t.Fatalf("result %+v", res)
		}
		for _, step := range res.Browser {
			if strings.Contains(step, "/.gateway/mcp/consent") {
				t.Errorf("a consent page was shown: %v", res.Browser)
			}
		}
	})
	t.Run("route outside the client's list", func(t *testing.T) {
		res, err := harness.RunTSClient(t, harness.ClientOptions{URL: s.SvcURL, Tool: "test_simple_text", ClientID: "ts-portal", ClientSecret: s.Secret, NoRefresh: true})
		if err == nil || !strings.Contains(res.Error, "invalid_target") {
			t.Fatalf("err %v, result error %q", err, res.Error)
		}
	})
	if strings.Contains(s.Logs.String(), s.Secret) {
		t.Error("the client secret appears in the logs")
	}
}
