package policy

import "testing"

func TestEvaluate_ClientID(t *testing.T) {
	t.Parallel()
	// Services of one client may call the route; people may too, but not through the
	// client a test suite uses.
	p := mustParse(t, `
- allow: {and: [{client_id: {is: ci-agent}}]}
- allow: {and: [{domain: {is: example.com}}]}
  deny: {and: [{client_id: {starts_with: "https://tests.example/"}}]}
`)
	service := &Input{Authenticated: true, User: "client:ci-agent", ClientID: "ci-agent", MCPMethod: MethodToolsCall, MCPTool: "deploy"}
	impostor := &Input{Authenticated: true, User: "client:ci-agent", ClientID: "other", MCPMethod: MethodToolsCall, MCPTool: "deploy"}
	user := alice(MethodToolsCall, "search")
	user.ClientID = "https://app.example/client.json"
	viaTests := alice(MethodToolsCall, "search")
	viaTests.ClientID = "https://tests.example/c.json"
	tests := []struct {
		name    string
		in      *Input
		allow   bool
		reasons []Reason
	}{
		{"the service", service, true, []Reason{ReasonClientIDOK}},
		{"a subject that looks like the service", impostor, false, []Reason{ReasonClientIDUnauthorized, ReasonDomainUnauthorized}},
		{"a user through an app", user, true, []Reason{ReasonDomainOK}},
		{"a user through a refused client", viaTests, false, nil},
		{"no identity", &Input{ClientID: "ci-agent"}, false, []Reason{ReasonUserUnauthenticated}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := p.Evaluate(tc.in)
			if d.Allow != tc.allow {
				t.Fatalf("allow %v, want %v (%+v)", d.Allow, tc.allow, d)
			}
			for _, r := range tc.reasons {
				if !d.AllowWhyTrue.Has(r) && !d.AllowWhyFalse.Has(r) {
					t.Errorf("reason %s missing: %+v", r, d)
				}
			}
		})
	}
	if ReasonClientIDOK.String() != "client-id-ok" || ReasonClientIDUnauthorized.String() != "client-id-unauthorized" {
		t.Error("reason names")
	}
}
