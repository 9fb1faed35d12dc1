package policytest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpmesh/gateway/filter/plugin/plugintest"
	"github.com/mcpmesh/gateway/shared/checkapi"
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
	broken := bytes.Replace(data, []byte("not_in: [echo, add, get-time, whoami]"), []byte("not_in: [add, get-time, whoami]"), 1)
	if bytes.Equal(broken, data) {
		t.Fatal("the example policy changed: update this test")
	}
	cfg := filepath.Join(t.TempDir(), "gateway.yaml")
	if err := os.WriteFile(cfg, broken, 0o600); err != nil {
		t.Fatal(err)
	}
	// The pinned route's lock file is read beside the configuration.
	lock, err := os.ReadFile(filepath.Join(filepath.Dir(exampleConfig), "demo-tools.lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(cfg), "demo-tools.lock.json"), lock, 0o600); err != nil {
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
		"expected allow, got deny 200: allow-why-true: domain-ok; allow-why-false: mcp-tool-unauthorized",
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
		{"before key", "cases:\n  - name: a\n    route: r\n    before:\n      - route: r\n        expct: allow\n    expect: deny\n", "c.yaml:6: cases[0].before[0].expct: unknown key"},
		{"before nested", "cases:\n  - name: a\n    route: r\n    before:\n      - route: r\n        before: []\n    expect: deny\n", "c.yaml:6: cases[0].before[0].before: a before request has no before requests of its own"},
		{"before route", "cases:\n  - name: a\n    route: r\n    before:\n      - mcp: {tool: echo}\n    expect: deny\n", "c.yaml:5: cases[0].before[0]: set exactly one of route and url"},
		{"before list", "cases:\n  - name: a\n    route: r\n    before: {route: r}\n    expect: deny\n", "c.yaml:4: cases[0].before: want a list of requests"},
		{"trailers type", "cases:\n  - name: a\n    route: r\n    trailers: [x]\n    expect: deny\n", "c.yaml:4: cases[0].trailers: want a mapping of header names to values"},
		{"trailers empty", "cases:\n  - name: a\n    route: r\n    trailers: {}\n    expect: deny\n", "c.yaml:4: cases[0].trailers: the mapping is empty"},
		{"response key", "cases:\n  - name: a\n    route: r\n    upstream_response:\n      stauts: 200\n    expect: deny\n", "c.yaml:5: cases[0].upstream_response.stauts: unknown key"},
		{"response status", "cases:\n  - name: a\n    route: r\n    upstream_response: {status: ok}\n    expect: deny\n", `c.yaml:4: cases[0].upstream_response.status: want an integer of at least 100, got "ok"`},
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

// TestSessionAndTrailers: the example's session cases really carry the session the client
// received (without it, alice's follow-up is refused), and a request ended by trailers is
// played to its end.
func TestSessionAndTrailers(t *testing.T) {
	tester, err := Load(exampleConfig, wasmbuild.Module(t))
	if err != nil {
		t.Fatal(err)
	}
	cases, err := LoadCases(exampleCases)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Case{}
	for _, c := range cases {
		byName[c.Name] = c
	}
	cont, ok := byName["alice continues the MCP session she opened"]
	if !ok || len(cont.Before) != 1 {
		t.Fatal("the example changed: update this test")
	}
	noSession := cont
	noSession.Name = "without the session"
	noSession.Headers = [][2]string{{"mcp-session-id", "not-" + SessionPlaceholder}}
	noSession.Expect = Expect{Decision: Deny}
	trailers := byName["a denied tool ended by trailers is still denied"]
	allowed := trailers
	allowed.Name, allowed.Message, allowed.Expect = "allowed, ended by trailers", &Message{Tool: "echo"}, Expect{Decision: Allow}
	results, err := tester.Run(context.Background(), []Case{cont, noSession, trailers, allowed})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		if !r.Passed() {
			t.Errorf("%s: %s", r.Case.Name, strings.Join(r.Problems, "; "))
		}
	}
	before := results[0].Before
	if len(before) != 1 || !before[0].Forwarded || before[0].Response == nil {
		t.Fatalf("before: %+v", before)
	}
	if id, ok := clientSession(before[0]); !ok || id == "" {
		t.Errorf("the client received no session: %v", before[0].Response)
	}
	if len(results[0].Records) != 1 {
		t.Errorf("records of the case itself only: %d records", len(results[0].Records))
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
	if err == nil || !strings.Contains(err.Error(), "gateway.yaml:48: config: routes[0].mcp.server.max_bytes: unknown key") {
		t.Fatalf("error %v; want the key and line 48", err)
	}
}

// TestScenarioSuite proves that the tester decides as the filter does: every case of the
// filter's own scenario suite (plugintest.Cases), run through this package's API under the
// suite's plugin configuration in Envoy's default mode, its check calls answered by the
// suite's own token service (plugintest.AnswerCheck, or the case's Answer) through
// Tester.CheckAnswer, meets everything plugintest.Check requires of it: forwarded or the
// status of the filter's answer, the reply, the headers the upstream receives, the response
// the client receives, the log and the number of check calls (not counters, properties or
// check-call headers, which its API does not report). No case is skipped.
func TestScenarioSuite(t *testing.T) {
	tester, err := NewPlugin(plugintest.Config(), wasmbuild.Module(t))
	if err != nil {
		t.Fatal(err)
	}
	tester.SessionKey = plugintest.SessionKey // the suite's session IDs are minted under it
	all := plugintest.Cases()
	answers := map[string]func(string, []byte) plugintest.CheckAnswer{}
	cases := make([]Case, len(all))
	for i, pc := range all {
		cases[i] = fromScenario(pc)
		if pc.Answer != nil {
			answers[pc.Name] = pc.Answer // for the request under test only, as the runners do
		}
	}
	tester.CheckAnswer = func(c Case, req checkapi.Request) (int, []byte, bool) {
		answer := plugintest.AnswerCheck
		if a := answers[c.Name]; a != nil {
			answer = a
		}
		body, err := json.Marshal(req)
		if err != nil {
			t.Errorf("%s: %v", c.Name, err)
		}
		a := answer(plugintest.FilterKey, body) // the tester checked the key
		if a.Fail {
			return 0, nil, true
		}
		return a.Status, []byte(a.Body), true
	}
	results, err := tester.Run(context.Background(), cases)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range results {
		t.Run(all[i].Name, func(t *testing.T) {
			if !r.Passed() {
				t.Errorf("%s", strings.Join(r.Problems, "; "))
			}
			// The tester's API reports neither counters, stream properties nor the check
			// call's headers: those are checked by the filter's runners (filter/plugin,
			// wasmtest/filtertest).
			c := all[i]
			c.Want.Counters, c.Want.Properties, c.Want.CheckHeaders = nil, nil, nil
			plugintest.Check(t, c, toScenarioResult(r))
		})
	}
	if len(results) != len(all) {
		t.Fatalf("%d of %d scenario cases ran", len(results), len(all))
	}
	t.Logf("%d of %d scenario cases run through the policytest API, 0 skipped", len(results), len(all))
}

// fromScenario translates a scenario case into the API: the request exactly as the suite
// sends it (with the x-request-id the wasm runner adds), its Before requests with the
// upstream's BeforeResponse, its trailers and upstream response, and the expected outcome.
func fromScenario(pc plugintest.Case) Case {
	c := fromRequest(pc.Name, pc.Request)
	c.Trailers = pc.Trailers
	c.UpstreamResponse = fromResponse(pc.Response, pc.ResponseBody)
	for i, b := range pc.Before {
		bc := fromRequest(fmt.Sprintf("%s/before[%d]", pc.Name, i), b)
		bc.UpstreamResponse = fromResponse(pc.BeforeResponse, pc.BeforeResponseBody)
		c.Before = append(c.Before, bc)
	}
	c.Expect = Expect{Decision: Allow}
	if pc.Want.Status != 0 {
		c.Expect = Expect{Decision: Deny, Status: pc.Want.Status}
	}
	return c
}

func fromRequest(name string, r plugintest.Request) Case {
	c := Case{Name: name, Authority: r.Authority, RawPath: r.Path, HTTPMethod: r.Method,
		Headers: append([][2]string{{"x-request-id", plugintest.RequestID}}, r.Headers...),
		Chunks:  r.Chunks, NoContentLength: r.NoContentLength, NoDefaultHeaders: true}
	if len(c.Chunks) == 0 {
		c.Chunks = nil
	}
	return c
}

func fromResponse(headers [][2]string, body []string) *Response {
	if headers == nil && body == nil {
		return nil
	}
	resp := &Response{Body: body}
	for _, h := range headers {
		if h[0] == ":status" {
			resp.Status, _ = strconv.Atoi(h[1])
			continue
		}
		resp.Headers = append(resp.Headers, h)
	}
	return resp
}

// toScenarioResult is a result as the suite's runners report it.
func toScenarioResult(r Result) plugintest.Result {
	o := r.Outcome
	res := plugintest.Result{Forwarded: o.Forwarded, Status: o.Status, Body: o.Body, Stuck: o.Stuck,
		Logs: r.Logs, CheckCalls: o.CheckCalls, ClientBody: o.ResponseBody}
	if !o.Forwarded && !o.Stuck {
		res.ReplyHeaders = map[string]string{}
		for _, h := range o.ReplyHeaders {
			res.ReplyHeaders[h[0]] = h[1]
		}
	}
	if o.Forwarded {
		res.Upstream = map[string]string{}
		for _, h := range o.Upstream {
			res.Upstream[h[0]] = h[1]
			res.UpstreamAll = append(res.UpstreamAll, h)
		}
	}
	if o.Response != nil {
		res.ClientResponse = plugintest.Headers(o.Response)
	}
	return res
}
