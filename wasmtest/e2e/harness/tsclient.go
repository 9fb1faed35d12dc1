package harness

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"testing"
	"time"
)

// ClientResult is what an MCP client flow ([RunTSClient], [RunGoClient]) did. Its JSON form is
// the object ts-client.mjs prints.
type ClientResult struct {
	// OK is true when every step asked for succeeded.
	OK bool `json:"ok"`
	// Steps lists the steps done, in order, e.g. unauthorized, authorization-request,
	// callback, token, connected, tools/list, tools/call, refresh, tools/call-after-refresh.
	Steps []string `json:"steps"`
	// ServerURL is the MCP URL used.
	ServerURL string `json:"server_url"`
	// ClientID is the OAuth client ID used; Registered tells whether it came from dynamic
	// client registration.
	ClientID   string `json:"client_id"`
	Registered bool   `json:"registered"`
	// AuthorizationParams are the query parameters of the authorization request, without
	// state and code_challenge (client_id, redirect_uri, scope, resource, prompt, …).
	AuthorizationParams map[string]string `json:"authorization_params,omitempty"`
	// Tools are the names returned by tools/list.
	Tools []string `json:"tools"`
	// Call and CallAfterRefresh are the results of tools/call before and after the refresh.
	Call             *ToolCallResult `json:"call"`
	CallAfterRefresh *ToolCallResult `json:"call_after_refresh"`
	// Refreshed is true when the client redeemed its refresh token; AccessTokenChanged and
	// RefreshTokenRotated describe the new token response.
	Refreshed           bool `json:"refreshed"`
	AccessTokenChanged  bool `json:"access_token_changed"`
	RefreshTokenRotated bool `json:"refresh_token_rotated"`
	// RefreshError is the OAuth error code of a refused refresh ("invalid_grant"), or the
	// error text of another refresh failure.
	RefreshError string `json:"refresh_error"`
	// DeniedCall is the result of ClientOptions.DeniedTool, DeniedCallError the error the
	// client raised for it instead.
	DeniedCall      *ToolCallResult `json:"denied_call"`
	DeniedCallError string          `json:"denied_call_error"`
	// Scope is the scope of the last token response, when the server sent one.
	Scope string `json:"scope"`
	// Error is the first failure, empty when OK.
	Error string `json:"error"`
	// Browser is the headless browser's request log ("METHOD URL -> STATUS").
	Browser []string `json:"browser"`
}

// ToolCallResult summarises a tools/call result: IsError and the content items (text items
// keep their text).
type ToolCallResult struct {
	IsError bool          `json:"is_error"`
	Content []ContentItem `json:"content"`
}

// ContentItem is one content item of a tool result.
type ContentItem struct {
	Type string `json:"type"`
	Text string `json:"text,omitempty"`
}

// ClientOptions configures an MCP client flow.
type ClientOptions struct {
	// URL is the MCP endpoint.
	URL string
	// Tool, if not empty, is called (with Args, a JSON-encodable map) before and after the
	// refresh; otherwise tools/list is repeated after the refresh.
	Tool string
	Args map[string]any
	// Scope is the client's fallback scope (used when neither the WWW-Authenticate challenge
	// nor the protected resource metadata names scopes). TypeScript client only.
	Scope string
	// ClientID and ClientSecret select a pre-registered client instead of dynamic
	// registration.
	ClientID, ClientSecret string
	// ClientMetadataURL is the https URL of the client's ID metadata document: the
	// TypeScript client uses it as its client_id instead of registering when the
	// authorization server advertises client_id_metadata_document_supported. TypeScript
	// client only.
	ClientMetadataURL string
	// Deny makes the browser click action=deny instead of action=approve on a consent form.
	Deny bool
	// Browser is the user agent of the Go client flow (a new one if nil), so a test can share
	// cookies between flows or inspect its History. The TypeScript client always uses its own
	// headless browser.
	Browser *Browser
	// NoRefresh skips the forced refresh and the second call.
	NoRefresh bool
	// BeforeRefresh, if set, is called (on the test's goroutine) after the first call and
	// before the forced refresh, e.g. to disable the account at the identity provider.
	BeforeRefresh func()
	// Timeout bounds the whole flow; zero means 60 seconds.
	Timeout time.Duration
	// DeniedTool, if not empty, is called (with Args) after Tool, before the refresh: a tool
	// the policy denies. Its result is DeniedCall, or the error the client raised
	// DeniedCallError.
	DeniedTool string
	// ProtocolVersion pins the MCP revision the Go client speaks ("" for its latest).
	ProtocolVersion string
	// HTTPClient, if set, carries the Go client's MCP and OAuth requests and its Browser's
	// (a copy keeps the Browser's cookie jar and redirect handling): for https hosts signed by
	// a test CA.
	HTTPClient *http.Client
	// Env are extra environment variables of the Node client (NODE_EXTRA_CA_CERTS=…).
	Env []string
	// TSClient2 runs the TypeScript client on @modelcontextprotocol/client 2.x instead of
	// @modelcontextprotocol/sdk 1.x, pinned to ProtocolVersion when that is set.
	TSClient2 bool
}

// errClientFailed reports a client flow that ran but did not succeed.
var errClientFailed = errors.New("MCP client flow failed")

// RunTSClient runs the official TypeScript SDK client flow (wasmtest/e2e/node/ts-client.mjs)
// on Node 22. The result is returned even when the flow failed, with an error wrapping the
// flow's own error message; the test fails only if the program could not run or printed no
// result.
func RunTSClient(t testing.TB, opts ClientOptions) (*ClientResult, error) {
	t.Helper()
	node := Node22Bin(t)
	script := nodeScript(t, "ts-client.mjs")
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	args := []string{script, "--url", opts.URL, "--timeout", fmt.Sprint(timeout.Milliseconds())}
	if opts.Tool != "" {
		a := opts.Args
		if a == nil {
			a = map[string]any{}
		}
		raw, err := json.Marshal(a)
		if err != nil {
			t.Fatalf("harness: encode tool arguments: %v", err)
		}
		args = append(args, "--tool", opts.Tool, "--args", string(raw))
	}
	if opts.Scope != "" {
		args = append(args, "--scope", opts.Scope)
	}
	if opts.ClientID != "" {
		args = append(args, "--client-id", opts.ClientID)
	}
	if opts.ClientMetadataURL != "" {
		args = append(args, "--client-metadata-url", opts.ClientMetadataURL)
	}
	if opts.Deny {
		args = append(args, "--consent", "deny")
	}
	if opts.NoRefresh {
		args = append(args, "--no-refresh")
	}
	if opts.BeforeRefresh != nil {
		args = append(args, "--pause-before-refresh")
	}
	if opts.DeniedTool != "" {
		args = append(args, "--denied-tool", opts.DeniedTool)
	}
	if opts.TSClient2 {
		args = append(args, "--sdk", "client2")
		if opts.ProtocolVersion != "" {
			args = append(args, "--pin", opts.ProtocolVersion)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout+10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = NodeDir(t)
	var env []string
	if opts.ClientSecret != "" {
		// Kept off the command line (visible to every user of the machine).
		env = append(env, "GATEWAY_E2E_CLIENT_SECRET="+opts.ClientSecret)
	}
	cmd.Env = childEnv(append(env, opts.Env...)...)
	setParentDeathSignal(cmd)
	var stdout bytes.Buffer
	stderr := &tailBuffer{}
	cmd.Stdout = &stdout
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatalf("harness: ts-client stdin: %v", err)
	}
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatalf("harness: ts-client stderr: %v", err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("harness: start ts-client: %v", err)
	}
	// stderr is read on another goroutine; the hook runs on this one (it may call t.Fatal).
	paused := make(chan struct{})
	resume := make(chan struct{})
	stderrDone := make(chan struct{})
	go func() {
		defer close(stderrDone)
		sc := bufio.NewScanner(errPipe)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if line == "PAUSE before-refresh" && opts.BeforeRefresh != nil {
				paused <- struct{}{}
				<-resume
				continue
			}
			fmt.Fprintln(stderr, line)
		}
		_, _ = io.Copy(stderr, errPipe)
	}()
	select {
	case <-paused:
		func() {
			defer close(resume)
			opts.BeforeRefresh()
		}()
		_, _ = io.WriteString(stdin, "go\n")
		<-stderrDone
	case <-stderrDone:
	}
	runErr := cmd.Wait()
	stdin.Close()
	var res ClientResult
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &res); err != nil {
		t.Fatalf("harness: ts-client printed no result (%v): %v\nstdout:\n%s\nstderr:\n%s",
			runErr, err, tail(stdout.String(), 4<<10), tail(stderr.String(), 8<<10))
	}
	if runErr != nil || !res.OK {
		return &res, fmt.Errorf("%w: TypeScript SDK client: %s (steps %v; stderr: %s)", errClientFailed, res.Error, res.Steps, tail(stderr.String(), 2<<10))
	}
	return &res, nil
}
