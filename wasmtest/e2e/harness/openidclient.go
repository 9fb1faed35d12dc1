package harness

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// OpenIDClientResult is what openid-client.mjs did: its JSON result object.
type OpenIDClientResult struct {
	OK bool `json:"ok"`
	// Steps lists the steps done: unauthorized, resource-metadata, discovery, registration,
	// callback, token, initialize, refresh, initialize-after-refresh.
	Steps     []string `json:"steps"`
	Algorithm string   `json:"algorithm"`
	// Challenge is the WWW-Authenticate header of the first 401; ResourceMetadata its
	// resource_metadata URL and PRMResource the resource that metadata names.
	Challenge        string `json:"challenge"`
	ResourceMetadata string `json:"resource_metadata"`
	PRMResource      string `json:"prm_resource"`
	Issuer           string `json:"issuer"`
	ClientID         string `json:"client_id"`
	// ScopeRequested is the scope of the authorization request (from the challenge, else the
	// metadata); ResourceSent the resource of the authorization and token requests.
	ScopeRequested string `json:"scope_requested"`
	ResourceSent   string `json:"resource_sent"`
	// TokenScope and RefreshScope are the scope of the two token responses.
	TokenScope   string `json:"token_scope"`
	RefreshScope string `json:"refresh_scope"`
	// MCPStatus and MCPStatusAfterRefresh are the HTTP status of initialize with each token.
	MCPStatus             int `json:"mcp_status"`
	MCPStatusAfterRefresh int `json:"mcp_status_after_refresh"`
	// Tools, Call and Denied are the tools/list names and the results of tools/call of the
	// permitted and the denied tool (with OpenIDClientOptions.Tool).
	Tools  []string              `json:"tools"`
	Call   *OpenIDToolCallResult `json:"call"`
	Denied *OpenIDToolCallResult `json:"denied"`
	// AccessToken is the last access token (a test token, for checks at other routes).
	AccessToken string `json:"access_token"`
	Error       string `json:"error"`
	// Browser is the browser's request log.
	Browser []string `json:"-"`
}

// OpenIDToolCallResult is the HTTP status and the summary of a tools/call answer.
type OpenIDToolCallResult struct {
	Status  int    `json:"status"`
	IsError bool   `json:"is_error"`
	Text    string `json:"text"`
	// Error is the JSON-RPC error message, when the answer is an error.
	Error string `json:"error"`
}

// OpenIDClientOptions configures RunOpenIDClientWith.
type OpenIDClientOptions struct {
	// URL is the MCP URL, sent as resource; Algorithm "oidc" or "oauth2"; RedirectURI where
	// the browser stops.
	URL, Algorithm, RedirectURI string
	// Tool, if set, is called after tools/list (it must succeed); DeniedTool, if set, is
	// called too and its answer reported, whatever it is.
	Tool, DeniedTool string
	// Browser, if set, signs in (one whose client trusts a test CA); a new one otherwise.
	Browser *Browser
}

// RunOpenIDClient runs openid-client.mjs on Node 22 against the MCP URL url with the discovery
// algorithm ("oidc" or "oauth2"); the sign-in is done by a [Browser] (the identity provider's
// login and the consent page), which stops at redirectURI. The result is returned even when
// the flow failed, with an error naming the flow's own error; the test fails only if the
// program could not run or printed no result.
func RunOpenIDClient(t testing.TB, url, algorithm, redirectURI string) (*OpenIDClientResult, error) {
	t.Helper()
	return RunOpenIDClientWith(t, OpenIDClientOptions{URL: url, Algorithm: algorithm, RedirectURI: redirectURI})
}

// RunOpenIDClientWith is [RunOpenIDClient] with every option.
func RunOpenIDClientWith(t testing.TB, o OpenIDClientOptions) (*OpenIDClientResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args := []string{nodeScript(t, "openid-client.mjs"), "--url", o.URL, "--algorithm", o.Algorithm, "--redirect-uri", o.RedirectURI}
	if o.Tool != "" {
		args = append(args, "--tool", o.Tool)
	}
	if o.DeniedTool != "" {
		args = append(args, "--denied-tool", o.DeniedTool)
	}
	algorithm, redirectURI := o.Algorithm, o.RedirectURI
	cmd := exec.CommandContext(ctx, Node22Bin(t), args...)
	cmd.Dir = NodeDir(t)
	cmd.Env = childEnv()
	setParentDeathSignal(cmd)
	stderr := &tailBuffer{}
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatalf("harness: openid-client stdin: %v", err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("harness: openid-client stdout: %v", err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("harness: start openid-client: %v", err)
	}
	browser := o.Browser
	if browser == nil {
		browser = NewBrowser()
	}
	var last string
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		var step struct {
			Authorize string `json:"authorize"`
		}
		if json.Unmarshal([]byte(line), &step) == nil && step.Authorize != "" {
			cb, err := browser.Authorize(ctx, step.Authorize, redirectURI)
			if err != nil {
				stdin.Close()
				_ = cmd.Wait()
				return &OpenIDClientResult{Browser: browser.History()}, fmt.Errorf("%w: openid-client: browser: %v (history %v)", errClientFailed, err, browser.History())
			}
			_, _ = io.WriteString(stdin, cb.String()+"\n")
			continue
		}
		if line != "" {
			last = line
		}
	}
	runErr := cmd.Wait()
	stdin.Close()
	var res OpenIDClientResult
	if err := json.Unmarshal([]byte(last), &res); err != nil {
		t.Fatalf("harness: openid-client printed no result (%v): %v\nlast line: %s\nstderr:\n%s", runErr, err, last, tail(stderr.String(), 8<<10))
	}
	res.Browser = browser.History()
	if runErr != nil || !res.OK {
		return &res, fmt.Errorf("%w: openid-client (%s discovery): %s (steps %v; stderr: %s)", errClientFailed, algorithm, res.Error, res.Steps, tail(stderr.String(), 2<<10))
	}
	return &res, nil
}
