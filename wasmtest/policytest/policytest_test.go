package policytest

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpmesh/gateway/filter/plugin/plugintest"
	"github.com/mcpmesh/gateway/wasmtest/wasmbuild"
)

const (
	exampleConfig = "../../examples/gateway.yaml"
	exampleCases  = "../../examples/policy-cases.yaml"
)

// TestExample runs the documented example cases against the quick-start configuration:
// every one must pass.
func TestExample(t *testing.T) {
	results := RunFiles(t, wasmbuild.Module(t), exampleConfig, exampleCases)
	if len(results) < 10 {
		t.Fatalf("%d example cases ran; the example covers more", len(results))
	}
}

// TestBrokenPolicyFails edits the example policy so that echo is no longer allowed: the case
// that calls echo must fail, saying what was expected, what happened and why.
func TestBrokenPolicyFails(t *testing.T) {
	data, err := os.ReadFile(exampleConfig)
	if err != nil {
		t.Fatal(err)
	}
	broken := bytes.Replace(data, []byte("not_in: [echo, add, get-time]"), []byte("not_in: [add, get-time]"), 1)
	if bytes.Equal(broken, data) {
		t.Fatal("the example policy changed: update this test")
	}
	cfg := filepath.Join(t.TempDir(), "gateway.yaml")
	if err := os.WriteFile(cfg, broken, 0o600); err != nil {
		t.Fatal(err)
	}
	tester, err := Load(cfg, wasmbuild.Module(t))
	if err != nil {
		t.Fatal(err)
	}
	cases, err := LoadCases(exampleCases)
	if err != nil {
		t.Fatal(err)
	}
	results, err := tester.Run(context.Background(), cases)
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	WriteTable(&table, results)
	out := table.String()
	for _, want := range []string{
		"FAIL alice calls an allowed tool (line 4)",
		"expected allow, got deny 403: allow-why-true: domain-ok; allow-why-false: mcp-tool-unauthorized",
		"failed",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report does not contain %q:\n%s", want, out)
		}
	}
}

// TestParseCases_Errors: a malformed cases file names the key path and the line.
func TestParseCases_Errors(t *testing.T) {
	cases := []struct{ name, yaml, want string }{
		{"unknown key", "cases:\n  - name: a\n    route: r\n    expect: allow\n    expct: deny\n", "c.yaml:5: cases[0].expct: unknown key"},
		{"bad decision", "cases:\n  - name: a\n    route: r\n    expect: alow\n", `c.yaml:4: cases[0].expect: want allow or deny, got "alow"`},
		{"missing expect", "cases:\n  - name: a\n    route: r\n", "c.yaml:2: cases[0].expect: required"},
		{"route and url", "cases:\n  - name: a\n    route: r\n    url: http://x/\n    expect: deny\n", "c.yaml:2: cases[0]: set exactly one of route and url"},
		{"identity type", "cases:\n  - name: a\n    route: r\n    identity: {email: a@b, groups: x}\n    expect: deny\n", "c.yaml:4: cases[0].identity.groups: want a list of strings"},
		{"status with allow", "cases:\n  - name: a\n    route: r\n    expect: {decision: allow, status: 403}\n", "c.yaml:4: cases[0].expect.status: an allowed request gets no answer"},
		{"message key", "cases:\n  - name: a\n    route: r\n    mcp: {method: tools/call, tol: echo}\n    expect: deny\n", "c.yaml:4: cases[0].mcp.tol: unknown key"},
		{"bad yaml", "cases:\n  - name: a\n\troute: r\n", "c.yaml:2: not valid YAML: yaml: line 2: found a tab"},
		{"top level", "case: []\n", "c.yaml:1: case: unknown key"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseCases("c.yaml", []byte(c.yaml))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v; want it to contain %q", err, c.want)
			}
		})
	}
}

// TestLoad_ConfigErrorNamesLine: a configuration problem names the key and its line.
func TestLoad_ConfigErrorNamesLine(t *testing.T) {
	data, err := os.ReadFile(exampleConfig)
	if err != nil {
		t.Fatal(err)
	}
	bad := bytes.Replace(data, []byte("not_in: [echo"), []byte("regex: [echo"), 1)
	bad = bytes.Replace(bad, []byte("      server: {}"), []byte("      server: {max_bytes: 1}"), 1)
	cfg := filepath.Join(t.TempDir(), "gateway.yaml")
	if err := os.WriteFile(cfg, bad, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Load(cfg, nil)
	if err == nil || !strings.Contains(err.Error(), "gateway.yaml:40: config: routes[0].mcp.server.max_bytes: unknown key") {
		t.Fatalf("error %v; want the key and line 40", err)
	}
}

// TestScenarioSuite proves that the tester decides as the filter does: every case of the
// filter's own scenario suite (plugintest.Cases), run through this package's API under the
// suite's plugin configuration, has the outcome (forwarded, or the status of the filter's
// answer) that plugintest.Check requires. Cases that need what the API does not model are
// skipped, each with its reason.
func TestScenarioSuite(t *testing.T) {
	tester, err := NewPlugin(plugintest.Config(), wasmbuild.Module(t))
	if err != nil {
		t.Fatal(err)
	}
	tester.SessionKey = plugintest.SessionKey // the suite's session IDs are minted under it
	var cases []Case
	skipped := map[string]int{}
	for _, pc := range plugintest.Cases() {
		c, skip := fromScenario(pc)
		if skip != "" {
			skipped[skip]++
			t.Logf("skip %s: %s", pc.Name, skip)
			continue
		}
		cases = append(cases, c)
	}
	results, err := tester.Run(context.Background(), cases)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		if !r.Passed() {
			t.Errorf("%s: %s", r.Case.Name, strings.Join(r.Problems, "; "))
		}
	}
	t.Logf("%d of %d scenario cases run through the policytest API; skipped: %v", len(cases), len(plugintest.Cases()), skipped)
}

// fromScenario translates a scenario case into the API's request form, or says why it
// cannot be.
func fromScenario(pc plugintest.Case) (Case, string) {
	switch {
	case len(pc.Before) > 0:
		return Case{}, "Before requests (a filled decision cache or an MCP session opened first)"
	case len(pc.Trailers) > 0:
		return Case{}, "request trailers"
	case pc.Answer != nil:
		return Case{}, "a custom check answer"
	}
	r := pc.Request
	c := Case{Name: pc.Name, Authority: r.Authority, RawPath: r.Path, HTTPMethod: r.Method, Headers: r.Headers,
		Chunks: r.Chunks, NoContentLength: r.NoContentLength, NoDefaultHeaders: true}
	if len(c.Chunks) == 0 {
		c.Chunks = nil
	}
	var creds []string
	for _, h := range r.Headers {
		if h[0] != "authorization" && !strings.EqualFold(h[0], "authorization") && !strings.EqualFold(h[0], "cookie") {
			continue
		}
		for _, tok := range []string{plugintest.TokenAlice2, plugintest.TokenAlice, plugintest.TokenBob, plugintest.TokenInvalid,
			plugintest.TokenServiceDown, plugintest.TokenGarbage, plugintest.TokenNoUpstream, plugintest.CookieAlice, plugintest.CookieExpired} {
			if strings.Contains(h[1], tok) {
				creds = append(creds, tok)
				break
			}
		}
	}
	alice := &Identity{Subject: "alice", Email: "alice@example.com", Groups: []string{"engineering"}}
	for i, cred := range creds {
		if i > 0 && cred != creds[0] {
			return Case{}, "several different credentials in one request"
		}
	}
	if len(creds) > 0 {
		switch creds[0] {
		case plugintest.TokenAlice, plugintest.TokenAlice2, plugintest.CookieAlice:
			c.Identity = alice
		case plugintest.TokenBob:
			c.Identity = &Identity{Subject: "bob", Email: "bob@other.org", Groups: []string{"engineering"}}
		case plugintest.TokenInvalid:
			c.TokenService = "invalid_token"
		case plugintest.TokenServiceDown:
			c.TokenService = TokenServiceUnavailable
		case plugintest.TokenGarbage:
			return Case{}, "a token service answering garbage (a custom check answer)"
		case plugintest.TokenNoUpstream:
			c.TokenService = "invalid_token"
			if strings.HasPrefix(strings.ToLower(r.Authority), "up.") {
				c.TokenService, c.Identity = "upstream_required", &Identity{Subject: "carol"}
			}
		case plugintest.CookieExpired:
			c.TokenService = "no_session"
		}
	}
	c.Expect = Expect{Decision: Allow}
	if pc.Want.Status != 0 {
		c.Expect = Expect{Decision: Deny, Status: pc.Want.Status}
	}
	return c, ""
}
