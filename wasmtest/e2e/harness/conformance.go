package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ConformanceOptions configures one run of the MCP conformance server suite.
type ConformanceOptions struct {
	// URL is the MCP endpoint under test.
	URL string
	// Token, if not empty, is sent as "Authorization: Bearer <Token>" on every request to
	// URL's origin (by auth-preload.mjs); the suite itself has no header option.
	Token string
	// Suite is "active" (the suite's default), "all" or "pending"; empty means the default.
	Suite string
	// Scenario, if not empty, runs only this scenario.
	Scenario string
	// ExpectedFailures is the path of a YAML baseline file (--expected-failures).
	ExpectedFailures string
	// Timeout bounds the run; zero means three minutes.
	Timeout time.Duration
	// Next runs the suite's 0.2.0-alpha.12 (the npm alias conformance-next) instead of 0.1.16.
	Next bool
	// Requirements, with Next, runs exactly the scenarios a revision requires
	// (--requirements 2026-07-28).
	Requirements string
}

// ConformanceResult is what a conformance run reported.
type ConformanceResult struct {
	// Passed and Failed are the checks counted on the suite's "Total: N passed, M failed" line.
	Passed, Failed int
	// Scenarios maps each scenario name in the summary to its passed and failed counts.
	Scenarios map[string]ScenarioCount
	// Output is the suite's combined stdout and stderr.
	Output string
	// ExitCode is the suite's exit status (non-zero when a check failed).
	ExitCode int
}

// ScenarioCount is the number of passed and failed checks of one conformance scenario.
type ScenarioCount struct {
	Passed, Failed int
}

// FailedScenarios returns the names of scenarios with at least one failed check.
func (r *ConformanceResult) FailedScenarios() []string {
	var out []string
	for name, c := range r.Scenarios {
		if c.Failed > 0 {
			out = append(out, name)
		}
	}
	return out
}

var (
	totalLine    = regexp.MustCompile(`(?m)^Total: (\d+) passed, (\d+) failed`)
	scenarioLine = regexp.MustCompile(`(?m)^\S+ ([A-Za-z0-9._-]+): (\d+) passed, (\d+) failed`)
)

// RunConformance runs `conformance server --url mcpURL` on Node 22 and returns the passed and
// failed totals and the suite's output. A non-empty bearerToken is added as
// "Authorization: Bearer …" to every request to mcpURL's origin. The test fails if the suite
// cannot run or prints no totals; failing checks are returned, not reported as test failures.
func RunConformance(t testing.TB, mcpURL, bearerToken string) (passed, failed int, output string) {
	t.Helper()
	r, err := RunConformanceWith(t, ConformanceOptions{URL: mcpURL, Token: bearerToken})
	if err != nil {
		t.Fatalf("harness: %v", err)
	}
	return r.Passed, r.Failed, r.Output
}

// RunConformanceWith is [RunConformance] with every option. It returns an error if the suite
// could not run or its output has no totals line.
func RunConformanceWith(t testing.TB, opts ConformanceOptions) (*ConformanceResult, error) {
	t.Helper()
	u, err := url.Parse(opts.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("conformance: bad MCP URL %q", opts.URL)
	}
	node := Node22Bin(t)
	suite := nodeModule(t, "@modelcontextprotocol", "conformance", "dist", "index.js")
	if opts.Next {
		suite = nodeModule(t, "conformance-next", "dist", "index.js")
	}
	var args []string
	env := childEnv()
	if opts.Token != "" {
		args = append(args, "--import", nodeScript(t, "auth-preload.mjs"))
		env = childEnv("GATEWAY_E2E_TOKEN="+opts.Token, "GATEWAY_E2E_TOKEN_ORIGIN="+u.Scheme+"://"+u.Host)
	}
	args = append(args, suite, "server", "--url", opts.URL, "-o", t.TempDir())
	if opts.Suite != "" {
		args = append(args, "--suite", opts.Suite)
	}
	if opts.Scenario != "" {
		args = append(args, "--scenario", opts.Scenario)
	}
	if opts.ExpectedFailures != "" {
		args = append(args, "--expected-failures", opts.ExpectedFailures)
	}
	if opts.Requirements != "" {
		args = append(args, "--requirements", opts.Requirements)
	}
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = 3 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = t.TempDir()
	cmd.Env = env
	setParentDeathSignal(cmd)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	runErr := cmd.Run()
	res := &ConformanceResult{Output: out.String(), Scenarios: map[string]ScenarioCount{}}
	var exitErr *exec.ExitError
	switch {
	case runErr == nil:
	case errors.As(runErr, &exitErr) && ctx.Err() == nil:
		res.ExitCode = exitErr.ExitCode()
	default:
		return res, fmt.Errorf("conformance: run suite: %w\n%s", runErr, tail(res.Output, 8<<10))
	}
	if err := res.readTotals(); err != nil {
		return res, err
	}
	summary := res.Output
	if i := strings.LastIndex(summary, "=== SUMMARY ==="); i >= 0 {
		summary = summary[i:]
	}
	for _, sm := range scenarioLine.FindAllStringSubmatch(summary, -1) {
		p, _ := strconv.Atoi(sm[2])
		f, _ := strconv.Atoi(sm[3])
		res.Scenarios[sm[1]] = ScenarioCount{Passed: p, Failed: f}
	}
	return res, nil
}

// readTotals reads the suite's last "Total: N passed, M failed" line into r.
func (r *ConformanceResult) readTotals() error {
	m := totalLine.FindAllStringSubmatch(r.Output, -1)
	if len(m) == 0 {
		return fmt.Errorf("conformance: no totals line in the output (exit %d):\n%s", r.ExitCode, tail(r.Output, 8<<10))
	}
	last := m[len(m)-1]
	r.Passed, _ = strconv.Atoi(last[1])
	r.Failed, _ = strconv.Atoi(last[2])
	return nil
}
