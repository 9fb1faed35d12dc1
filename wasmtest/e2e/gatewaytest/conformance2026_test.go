package gatewaytest

import (
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"testing"

	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/wasmtest/e2e/harness"
)

// TestConformance_2026ThroughGatewayMatchesDirect runs suite 0.2.0-alpha.12 with
// --requirements 2026-07-28 (exactly the scenarios MCP 2026-07-28 requires, its
// header-validation scenarios among them) against the Go SDK everything-server in its stateless
// mode, directly and through the gateway with a token obtained by openid-client: the same
// scenarios must pass and fail both ways. The gateway's own checks of Mcp-Method, Mcp-Name
// and MCP-Protocol-Version answer as the specification asks of servers (400, -32020), so the
// suite cannot tell them from the server's.
func TestConformance_2026ThroughGatewayMatchesDirect(t *testing.T) {
	idp := harness.StartIDP(t, harness.IDPOptions{})
	everything := harness.StartStatelessEverythingServer(t)
	authL, mcpL := listen(t, "127.0.0.1"), listen(t, "127.0.0.1")
	authURL, mcpURL := "http://"+authL.Addr().String(), "http://"+mcpL.Addr().String()+"/mcp"
	cfg, err := config.Parse(fmt.Appendf(nil, `
runtime_flags: {mcp: true}
authenticate_service_url: %s
shared_secret: %s
cookie_secret: %s
idp_provider: oidc
idp_provider_url: %s
idp_client_id: %s
idp_client_secret: %s
storage: {type: sqlite, path: %s}
routes:
  - name: Everything (stateless)
    from: %s
    to: %s
    policy: {allow: {and: [{authenticated_user: true}]}}
    mcp: {server: {max_request_bytes: 1048576}}
`, authURL, randomSecret(), randomSecret(), idp.Issuer, idp.ClientID, idp.ClientSecret,
		filepath.Join(t.TempDir(), "gateway.db"), mcpURL, everything), nil)
	if err != nil {
		t.Fatal(err)
	}
	startProviderGateway(t, cfg, io.Discard, &testWriter{t: t}, authL, mcpL)

	oc, err := harness.RunOpenIDClient(t, mcpURL, "oauth2", redirectURI)
	if err != nil {
		t.Fatal(err)
	}
	opts := harness.ConformanceOptions{Next: true, Requirements: "2026-07-28"}
	opts.URL = everything
	direct, err := harness.RunConformanceWith(t, opts)
	if err != nil {
		t.Fatal(err)
	}
	opts.URL, opts.Token = mcpURL, oc.AccessToken
	through, err := harness.RunConformanceWith(t, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("suite 0.2.0-alpha.12 --requirements 2026-07-28: directly %d passed, %d failed (%d scenarios); through the gateway %d passed, %d failed",
		direct.Passed, direct.Failed, len(direct.Scenarios), through.Passed, through.Failed)
	if direct.Passed == 0 || len(direct.Scenarios) < 20 {
		t.Fatalf("direct run looks empty: %d passed, %d scenarios\n%s", direct.Passed, len(direct.Scenarios), direct.Output)
	}
	if through.Passed != direct.Passed || through.Failed != direct.Failed || !maps.Equal(through.Scenarios, direct.Scenarios) {
		t.Fatalf("through the gateway %d passed, %d failed (failed scenarios %v); directly %d passed, %d failed (%v)\n%s",
			through.Passed, through.Failed, through.FailedScenarios(), direct.Passed, direct.Failed, direct.FailedScenarios(), through.Output)
	}
}
