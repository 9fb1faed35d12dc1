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
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// InspectorRun is one invocation of the MCP Inspector CLI: its JSON result on stdout, exit
// status and stderr, and whether it asked for a sign-in.
type InspectorRun struct {
	Result   map[string]any
	ExitCode int
	Stderr   string
	SignedIn bool
}

// Inspector runs the MCP Inspector CLI (npm @modelcontextprotocol/inspector, `--cli`, on Node
// 22) headlessly against one MCP URL, with its own HOME (where it keeps its OAuth state) and
// loopback callback; a [Browser] signs in when the CLI prints an authorization URL, and
// delivers the callback to the CLI's listener.
type Inspector struct {
	t        testing.TB
	url      string
	home     string
	callback string
	browser  *Browser
	env      []string
}

// NewInspector prepares Inspector CLI runs against url; httpClient (may be nil) carries the
// browser's requests (a test CA), env are extra environment variables.
func NewInspector(t testing.TB, url string, httpClient *http.Client, env ...string) *Inspector {
	t.Helper()
	port, err := freePort()
	if err != nil {
		t.Fatalf("harness: %v", err)
	}
	b := NewBrowser()
	if httpClient != nil {
		b.Client.Transport = httpClient.Transport
	}
	return &Inspector{t: t, url: url, home: t.TempDir(), callback: "http://127.0.0.1:" + strconv.Itoa(port) + "/oauth/callback", browser: b, env: env}
}

// Home is the CLI's HOME directory (its OAuth state lives beneath it).
func (in *Inspector) Home() string { return in.home }

// Run invokes the CLI with --method method and args, signing in if it asks.
func (in *Inspector) Run(method string, args ...string) (*InspectorRun, error) {
	t := in.t
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	argv := append([]string{nodeModule(t, "@modelcontextprotocol", "inspector", "clients", "launcher", "build", "index.js"),
		"--cli", "--server-url", in.url, "--transport", "http", "--format", "json", "--callback-url", in.callback,
		"--method", method}, args...)
	cmd := exec.CommandContext(ctx, Node22Bin(t), argv...)
	cmd.Dir = in.home
	cmd.Env = childEnv(append([]string{"HOME=" + in.home, "BROWSER=true", "MCP_AUTO_OPEN_ENABLED=true", "MCP_INSPECTOR_SECRET_STORE=file"}, in.env...)...)
	setParentDeathSignal(cmd)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("harness: start the Inspector CLI: %v", err)
	}
	run := &InspectorRun{}
	stderr := &tailBuffer{}
	var authErr error
	sc := bufio.NewScanner(errPipe)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(stderr, line)
		i := strings.Index(line, "http")
		if i < 0 || !strings.Contains(line, "response_type=code") || run.SignedIn {
			continue
		}
		u := strings.Fields(line[i:])[0]
		run.SignedIn = true
		stop, err := in.browser.Authorize(ctx, u, in.callback)
		if err != nil {
			authErr = fmt.Errorf("browser: %w (history %v)", err, in.browser.History())
			continue
		}
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(stop.String())
		if err != nil {
			authErr = fmt.Errorf("deliver the callback: %w", err)
			continue
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	waitErr := cmd.Wait()
	run.Stderr = stderr.String()
	if ee, ok := waitErr.(*exec.ExitError); ok {
		run.ExitCode = ee.ExitCode()
	}
	if authErr != nil {
		return run, authErr
	}
	out := bytes.TrimSpace(stdout.Bytes())
	if err := json.Unmarshal(out, &run.Result); err != nil {
		return run, fmt.Errorf("inspector %s: exit %d, no JSON result (%v): %s; stderr: %s", method, run.ExitCode, err, tail(string(out), 2<<10), tail(run.Stderr, 3<<10))
	}
	return run, nil
}

// secretsFile is the Inspector's file secret store (MCP_INSPECTOR_SECRET_STORE=file).
func (in *Inspector) secretsFile() string {
	return filepath.Join(in.home, ".mcp-inspector", "secrets.json")
}

// AccessToken returns the access token the Inspector stored for its server.
func (in *Inspector) AccessToken() (string, error) {
	var tok string
	err := in.editTokens(func(m map[string]any) { tok, _ = m["access_token"].(string) }, false)
	return tok, err
}

// SpoilAccessToken replaces the stored access token with one the gateway does not know, so
// that the next run gets 401 and must refresh with its refresh token.
func (in *Inspector) SpoilAccessToken() error {
	return in.editTokens(func(m map[string]any) { m["access_token"] = "spoiled-by-the-test" }, true)
}

func (in *Inspector) editTokens(f func(map[string]any), write bool) error {
	b, err := os.ReadFile(in.secretsFile())
	if err != nil {
		return err
	}
	var store map[string]any
	if err := json.Unmarshal(b, &store); err != nil {
		return err
	}
	secrets, _ := store["secrets"].(map[string]any)
	n := 0
	for k, v := range secrets {
		s, ok := v.(string)
		if !ok || !strings.Contains(k, ":tokens:") {
			continue
		}
		var tok map[string]any
		if err := json.Unmarshal([]byte(s), &tok); err != nil {
			return err
		}
		f(tok)
		nb, _ := json.Marshal(tok)
		secrets[k] = string(nb)
		n++
	}
	if n != 1 {
		return fmt.Errorf("inspector secrets: %d token entries", n)
	}
	if !write {
		return nil
	}
	out, _ := json.Marshal(store)
	return os.WriteFile(in.secretsFile(), out, 0o600)
}

// RunInspectorCLI runs the matrix flow with the Inspector CLI: tools/list (signing in),
// tools/call of opts.Tool and opts.DeniedTool (the CLI exits 5 for an isError result and still
// prints it), then a call of opts.Tool after the stored access token was spoiled, which the
// Inspector must survive by refreshing.
func RunInspectorCLI(t testing.TB, opts ClientOptions) (*ClientResult, error) {
	t.Helper()
	in := NewInspector(t, opts.URL, opts.HTTPClient, opts.Env...)
	res := &ClientResult{ServerURL: opts.URL, Steps: []string{}, Tools: []string{}, Registered: true}
	fail := func(err error) (*ClientResult, error) {
		res.Error = err.Error()
		res.Browser = in.browser.History()
		return res, fmt.Errorf("%w: MCP Inspector CLI: %w (steps %v)", errClientFailed, err, res.Steps)
	}
	list, err := in.Run("tools/list")
	if err != nil {
		return fail(err)
	}
	if !list.SignedIn {
		return fail(errors.New("the Inspector did not sign in"))
	}
	res.Steps = append(res.Steps, "authorization-request", "callback", "token", "tools/list")
	if r, ok := list.Result["result"].(map[string]any); ok {
		tools, _ := r["tools"].([]any)
		for _, tl := range tools {
			if m, ok := tl.(map[string]any); ok {
				name, _ := m["name"].(string)
				res.Tools = append(res.Tools, name)
			}
		}
	}
	args, _ := json.Marshal(opts.Args)
	call := func(tool string) (*ToolCallResult, error) {
		run, err := in.Run("tools/call", "--tool-name", tool, "--tool-args-json", string(args))
		if err != nil {
			return nil, err
		}
		if run.SignedIn {
			return nil, errors.New("the Inspector signed in again instead of using (or refreshing) its token")
		}
		r, ok := run.Result["result"].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("no result (exit %d): %v; stderr %s", run.ExitCode, run.Result, tail(run.Stderr, 2<<10))
		}
		out := &ToolCallResult{IsError: r["isError"] == true, Content: []ContentItem{}}
		content, _ := r["content"].([]any)
		for _, c := range content {
			if cm, ok := c.(map[string]any); ok {
				text, _ := cm["text"].(string)
				typ, _ := cm["type"].(string)
				out.Content = append(out.Content, ContentItem{Type: typ, Text: text})
			}
		}
		return out, nil
	}
	if res.Call, err = call(opts.Tool); err != nil {
		return fail(err)
	}
	res.Steps = append(res.Steps, "tools/call")
	if opts.DeniedTool != "" {
		if res.DeniedCall, err = call(opts.DeniedTool); err != nil {
			res.DeniedCallError = err.Error()
		}
		res.Steps = append(res.Steps, "tools/call-denied")
	}
	before, err := in.AccessToken()
	if err != nil {
		return fail(err)
	}
	if err := in.SpoilAccessToken(); err != nil {
		return fail(err)
	}
	if res.CallAfterRefresh, err = call(opts.Tool); err != nil {
		return fail(fmt.Errorf("after the access token was spoiled: %w", err))
	}
	after, err := in.AccessToken()
	if err != nil {
		return fail(err)
	}
	res.Refreshed = after != "spoiled-by-the-test" && after != before
	res.AccessTokenChanged = res.Refreshed
	if !res.Refreshed {
		return fail(errors.New("the Inspector did not refresh its access token"))
	}
	res.Steps = append(res.Steps, "refresh", "tools/call-after-refresh")
	res.Browser = in.browser.History()
	res.OK = true
	return res, nil
}
