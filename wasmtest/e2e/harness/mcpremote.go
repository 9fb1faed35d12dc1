package harness

import (
	"bufio"
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
	"sync"
	"testing"
	"time"
)

// RunMCPRemote drives mcp-remote (npm, the stdio bridge desktop applications use for remote
// MCP servers) headlessly: `node dist/proxy.js URL PORT` with its configuration in a temporary
// MCP_REMOTE_CONFIG_DIR and BROWSER=true (no browser is opened). It signs in when mcp-remote
// prints the authorization URL (a [Browser] follows it, then delivers the callback to
// mcp-remote's loopback server at http://localhost:PORT/oauth/callback), then speaks MCP on
// its stdin/stdout as a desktop application would: initialize, tools/list, tools/call of
// opts.Tool and opts.DeniedTool, then marks the stored access token expired (tokens.json's
// expires_at), so that mcp-remote refreshes it with the refresh token before the next
// tools/call of opts.Tool. Node clients trust a test CA through NODE_EXTRA_CA_CERTS in the
// environment or opts.Env.
func RunMCPRemote(t testing.TB, opts ClientOptions) (*ClientResult, error) {
	t.Helper()
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = 90 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	port, err := freePort()
	if err != nil {
		t.Fatalf("harness: %v", err)
	}
	cfgDir := t.TempDir()
	args := []string{nodeModule(t, "mcp-remote", "dist", "proxy.js"), opts.URL, strconv.Itoa(port)}
	if strings.HasPrefix(opts.URL, "http:") {
		args = append(args, "--allow-http") // as a user must for a plain-http server URL
	}
	cmd := exec.CommandContext(ctx, Node22Bin(t), args...)
	cmd.Dir = NodeDir(t)
	cmd.Env = childEnv(append([]string{"MCP_REMOTE_CONFIG_DIR=" + cfgDir, "BROWSER=true"}, opts.Env...)...)
	setParentDeathSignal(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("harness: start mcp-remote: %v", err)
	}
	defer func() { stdin.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() }()

	res := &ClientResult{ServerURL: opts.URL, Steps: []string{}, Tools: []string{}, Registered: true}
	browser := opts.Browser
	if browser == nil {
		browser = NewBrowser()
		if opts.HTTPClient != nil {
			browser.Client.Transport = opts.HTTPClient.Transport
		}
	}
	stderr := &tailBuffer{}
	authURLs := make(chan string, 4)
	var refreshedMu sync.Mutex
	refreshed := false
	stderrDone := make(chan struct{})
	go func() {
		defer close(stderrDone)
		sc := bufio.NewScanner(errPipe)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(stderr, line)
			if u := strings.TrimSpace(line); strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://") {
				if strings.Contains(u, "response_type=code") {
					authURLs <- u
				}
			}
			if strings.Contains(line, "Refreshed the access token") {
				refreshedMu.Lock()
				refreshed = true
				refreshedMu.Unlock()
			}
		}
	}()
	responses := make(chan map[string]any, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				responses <- m
			}
		}
		close(responses)
	}()
	fail := func(err error) (*ClientResult, error) {
		res.Browser = browser.History()
		res.Error = err.Error()
		return res, fmt.Errorf("%w: mcp-remote: %w (steps %v; stderr: %s)", errClientFailed, err, res.Steps, tail(stderr.String(), 3<<10))
	}

	// Sign-in: mcp-remote connects at start, gets 401, and prints the authorization URL.
	select {
	case u := <-authURLs:
		res.Steps = append(res.Steps, "authorization-request")
		callback := "http://localhost:" + strconv.Itoa(port) + "/oauth/callback"
		stop, err := browser.Authorize(ctx, u, callback)
		if err != nil {
			return fail(fmt.Errorf("browser: %w", err))
		}
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(stop.String())
		if err != nil {
			return fail(fmt.Errorf("deliver the callback: %w", err))
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		res.Steps = append(res.Steps, "callback")
	case <-stderrDone:
		return fail(errors.New("mcp-remote exited without printing an authorization URL"))
	case <-ctx.Done():
		return fail(errors.New("mcp-remote printed no authorization URL"))
	}

	id := 0
	request := func(method string, params any) (map[string]any, error) {
		id++
		msg := map[string]any{"jsonrpc": "2.0", "id": id, "method": method}
		if params != nil {
			msg["params"] = params
		}
		b, _ := json.Marshal(msg)
		if _, err := stdin.Write(append(b, '\n')); err != nil {
			return nil, err
		}
		for {
			select {
			case m, ok := <-responses:
				if !ok {
					return nil, errors.New("mcp-remote closed its stdout")
				}
				if v, ok := m["id"].(float64); ok && int(v) == id {
					if e, ok := m["error"]; ok {
						b, _ := json.Marshal(e)
						return nil, fmt.Errorf("%s: error %s", method, b)
					}
					r, _ := m["result"].(map[string]any)
					return r, nil
				}
			case <-ctx.Done():
				return nil, fmt.Errorf("%s: no answer: %w", method, ctx.Err())
			}
		}
	}
	if _, err := request("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "gateway-e2e-mcp-remote-host", "version": "1.0.0"}}); err != nil {
		return fail(err)
	}
	_, _ = stdin.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"))
	res.Steps = append(res.Steps, "token", "connected")
	list, err := request("tools/list", map[string]any{})
	if err != nil {
		return fail(err)
	}
	tools, _ := list["tools"].([]any)
	for _, tl := range tools {
		if m, ok := tl.(map[string]any); ok {
			name, _ := m["name"].(string)
			res.Tools = append(res.Tools, name)
		}
	}
	res.Steps = append(res.Steps, "tools/list")
	call := func(tool string) (*ToolCallResult, error) {
		r, err := request("tools/call", map[string]any{"name": tool, "arguments": opts.Args})
		if err != nil {
			return nil, err
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
	before, err := expireStoredToken(cfgDir)
	if err != nil {
		return fail(err)
	}
	if res.CallAfterRefresh, err = call(opts.Tool); err != nil {
		return fail(fmt.Errorf("after the token expired: %w", err))
	}
	after, err := storedAccessToken(cfgDir)
	if err != nil {
		return fail(err)
	}
	refreshedMu.Lock()
	res.Refreshed = refreshed
	refreshedMu.Unlock()
	res.AccessTokenChanged = after != before
	if !res.Refreshed || !res.AccessTokenChanged {
		return fail(fmt.Errorf("no refresh: logged %v, access token changed %v", res.Refreshed, res.AccessTokenChanged))
	}
	res.Steps = append(res.Steps, "refresh", "tools/call-after-refresh")
	res.Browser = browser.History()
	res.OK = true
	return res, nil
}

// tokensFile finds mcp-remote's tokens.json under its configuration directory.
func tokensFile(cfgDir string) (string, error) {
	m, _ := filepath.Glob(filepath.Join(cfgDir, "*", "*_tokens.json"))
	if len(m) != 1 {
		return "", fmt.Errorf("mcp-remote tokens file: found %v", m)
	}
	return m[0], nil
}

func storedAccessToken(cfgDir string) (string, error) {
	p, err := tokensFile(cfgDir)
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return "", err
	}
	var tok map[string]any
	if err := json.Unmarshal(b, &tok); err != nil {
		return "", err
	}
	s, _ := tok["access_token"].(string)
	return s, nil
}

// expireStoredToken marks the stored access token expired and returns it.
func expireStoredToken(cfgDir string) (string, error) {
	p, err := tokensFile(cfgDir)
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return "", err
	}
	var tok map[string]any
	if err := json.Unmarshal(b, &tok); err != nil {
		return "", err
	}
	tok["expires_at"] = time.Now().Add(-time.Hour).UnixMilli()
	tok["expires_in"] = 0
	out, _ := json.Marshal(tok)
	if err := os.WriteFile(p, out, 0o600); err != nil {
		return "", err
	}
	s, _ := tok["access_token"].(string)
	return s, nil
}
