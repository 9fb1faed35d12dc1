package gatewaytest

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/wasmtest/e2e/harness"
)

// TestConformance_AuthorizationServer runs the conformance suite's (0.2.0-alpha.12)
// authorization-server scenarios — the metadata endpoint and the authorization code grant —
// against the gateway's authorization server through the local gateway, with a pre-registered
// public client (mcp_clients) and the route's URL as the resource. The suite prints the
// authorization URL and waits for a browser: the harness's browser signs alice in at the
// OpenID provider and hands the redirect to the suite's callback server.
func TestConformance_AuthorizationServer(t *testing.T) {
	idp := harness.StartIDP(t, harness.IDPOptions{})
	authL, mcpL := listen(t, "127.0.0.1"), listen(t, "127.0.0.1")
	authURL, issuer := "http://"+authL.Addr().String(), "http://"+mcpL.Addr().String()
	mcpURL := issuer + "/mcp"
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
  - name: Conformance
    from: %s
    to: http://127.0.0.1:9/mcp
    policy: {allow: {and: [{authenticated_user: true}]}}
    mcp: {server: {}}
mcp_clients:
  - client_id: conformance-suite
    name: MCP conformance suite
    application_type: native
    redirect_uris: [http://127.0.0.1/callback]
`, authURL, randomSecret(), randomSecret(), idp.Issuer, idp.ClientID, idp.ClientSecret,
		filepath.Join(t.TempDir(), "gateway.db"), mcpURL), nil)
	if err != nil {
		t.Fatal(err)
	}
	startProviderGateway(t, cfg, io.Discard, &testWriter{t: t}, authL, mcpL)

	res, err := harness.RunAuthorizationConformance(t, harness.AuthorizationConformanceOptions{
		Issuer: issuer, ClientID: "conformance-suite", Resource: mcpURL, Browser: harness.NewBrowser()})
	if err != nil {
		t.Fatalf("%v\n%s", err, res.Output)
	}
	t.Logf("conformance 0.2.0-alpha.12 authorization: %d passed, %d failed\n%s", res.Passed, res.Failed, res.Output)
	if res.Failed != 0 || res.Passed == 0 || res.ExitCode != 0 {
		t.Errorf("authorization scenarios: %d passed, %d failed, exit %d\n%s", res.Passed, res.Failed, res.ExitCode, res.Output)
	}
	for _, s := range []string{"authorization-server-metadata-endpoint", "authorization-code-grant"} {
		if !strings.Contains(res.Output, s) {
			t.Errorf("the suite did not run %s:\n%s", s, res.Output)
		}
	}
}
