package harness

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// AuthorizationConformanceOptions runs the conformance suite's `authorization` command
// (0.2.0-alpha.12, the npm alias conformance-next) against an authorization server.
type AuthorizationConformanceOptions struct {
	// Issuer is the authorization server's issuer URL (the suite's --url).
	Issuer string
	// ClientID is a client registered with http://127.0.0.1/callback as a redirect URI (a
	// loopback redirect, so any port matches).
	ClientID string
	// Resource is the RFC 8707 resource the suite sends (--resource).
	Resource string
	// Browser signs the user in when the suite asks for the authorization URL to be opened.
	Browser *Browser
}

// RunAuthorizationConformance runs every authorization-server scenario of the suite. When the
// suite prints the authorization URL and waits for a browser, Browser completes the sign-in
// and delivers the redirect to the suite's callback server, as a person would.
func RunAuthorizationConformance(t testing.TB, opts AuthorizationConformanceOptions) (*ConformanceResult, error) {
	t.Helper()
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	args := []string{nodeModule(t, "conformance-next", "dist", "index.js"), "authorization",
		"--url", opts.Issuer, "--client-id", opts.ClientID, "-p", strconv.Itoa(port), "-o", t.TempDir()}
	if opts.Resource != "" {
		args = append(args, "--resource", opts.Resource)
	}
	cmd := exec.CommandContext(ctx, Node22Bin(t), args...)
	cmd.Dir = t.TempDir()
	cmd.Env = childEnv()
	setParentDeathSignal(cmd)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	var mu sync.Mutex
	cmd.Stderr = writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return out.Write(p) })
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	callback := fmt.Sprintf("http://127.0.0.1:%d/callback", port)
	var browseErr error
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		mu.Lock()
		out.WriteString(line + "\n")
		mu.Unlock()
		if !strings.HasPrefix(line, "http") || !strings.Contains(line, "redirect_uri=") || browseErr != nil {
			continue
		}
		// The suite waits for this URL to be opened in a browser.
		redirect, err := opts.Browser.Authorize(ctx, line, callback)
		if err == nil {
			var resp *http.Response
			if resp, err = http.Get(redirect.String()); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}
		if err != nil {
			browseErr = fmt.Errorf("browser: %w", err)
			cancel() // the suite would otherwise wait five minutes for the callback
		}
	}
	runErr := cmd.Wait()
	mu.Lock()
	res := &ConformanceResult{Output: out.String(), Scenarios: map[string]ScenarioCount{}}
	mu.Unlock()
	if browseErr != nil {
		return res, browseErr
	}
	var exitErr *exec.ExitError
	switch {
	case runErr == nil:
	case errors.As(runErr, &exitErr) && ctx.Err() == nil:
		res.ExitCode = exitErr.ExitCode()
	default:
		return res, fmt.Errorf("conformance: run suite: %w\n%s", runErr, tail(res.Output, 8<<10))
	}
	return res, res.readTotals()
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
