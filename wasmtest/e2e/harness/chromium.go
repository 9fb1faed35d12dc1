package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// DefaultChromium is where Debian's chromium package (build/install-chromium.sh, run by
// `make e2e-deps`) puts the browser. GATEWAY_CHROMIUM overrides it.
const DefaultChromium = "/usr/bin/chromium"

// Chromium is a headless chromium driven by playwright-core (wasmtest/e2e/node/chromium.mjs):
// one browser context with one page, so cookies persist across the steps of a test the way
// they do for a person. Every method fails the test when the step fails.
type Chromium struct {
	t       testing.TB
	control string
	proc    *process
}

// ChromiumBin returns the chromium binary, failing the test (never skipping) when it is not
// installed.
func ChromiumBin(t testing.TB) string {
	t.Helper()
	bin := os.Getenv("GATEWAY_CHROMIUM")
	if bin == "" {
		bin = DefaultChromium
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("harness: chromium is not installed at %s: run `make e2e-deps` (build/install-chromium.sh)", bin)
	}
	return bin
}

// StartChromium starts the browser; it is stopped when the test ends.
func StartChromium(t testing.TB) *Chromium {
	t.Helper()
	bin := ChromiumBin(t)
	nodeModule(t, "playwright-core", "package.json")
	cmd := exec.Command(Node22Bin(t), nodeScript(t, "chromium.mjs"))
	cmd.Dir = NodeDir(t)
	cmd.Env = childEnv("CHROMIUM_PATH=" + bin)
	p, u := startProcess(t, "chromium", cmd, func(line string) (string, bool) {
		v, ok := strings.CutPrefix(line, "READY ")
		return strings.TrimSpace(v), ok
	}, 60*time.Second)
	if !strings.HasPrefix(u, "http://127.0.0.1:") {
		t.Fatalf("harness: chromium.mjs printed a bad URL %q", u)
	}
	return &Chromium{t: t, control: u + "/cmd", proc: p}
}

// chromiumAnswer is the control API's answer.
type chromiumAnswer struct {
	OK          bool           `json:"ok"`
	Error       string         `json:"error"`
	URL         string         `json:"url"`
	Status      int            `json:"status"`
	Text        string         `json:"text"`
	Texts       []string       `json:"texts"`
	Value       *string        `json:"value"`
	Count       int            `json:"count"`
	Content     string         `json:"content"`
	Navigations []PageResponse `json:"navigations"`
}

// PageResponse is a main-frame navigation response the browser received.
type PageResponse struct {
	URL    string `json:"url"`
	Status int    `json:"status"`
}

func (c *Chromium) do(cmd map[string]any) chromiumAnswer {
	c.t.Helper()
	ans, err := c.try(cmd)
	if err != nil {
		c.t.Fatalf("harness: chromium %v: %v", cmd["op"], err)
	}
	return ans
}

func (c *Chromium) try(cmd map[string]any) (chromiumAnswer, error) {
	var ans chromiumAnswer
	body, err := json.Marshal(cmd)
	if err != nil {
		return ans, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.control, bytes.NewReader(body))
	if err != nil {
		return ans, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return ans, fmt.Errorf("control API: %w (%s)", err, c.proc.state())
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&ans); err != nil {
		return ans, fmt.Errorf("control API answer: %w", err)
	}
	if !ans.OK {
		return ans, fmt.Errorf("%s (page at %s)", ans.Error, ans.URL)
	}
	return ans, nil
}

// Goto navigates to url and returns the status of the final response.
func (c *Chromium) Goto(url string) int {
	c.t.Helper()
	return c.do(map[string]any{"op": "goto", "url": url}).Status
}

// Click clicks the first element matching the CSS selector and waits for the page to load;
// with waitURL, until the page's URL starts with it (after a chain of redirects and pages).
// It returns the page's URL.
func (c *Chromium) Click(selector, waitURL string) string {
	c.t.Helper()
	return c.do(map[string]any{"op": "click", "selector": selector, "wait_url": waitURL}).URL
}

// Fill types value into the first input or textarea matching selector.
func (c *Chromium) Fill(selector, value string) {
	c.t.Helper()
	c.do(map[string]any{"op": "fill", "selector": selector, "value": value})
}

// Select picks the option of value in the first select matching selector.
func (c *Chromium) Select(selector, value string) {
	c.t.Helper()
	c.do(map[string]any{"op": "select", "selector": selector, "value": value})
}

// Text returns the rendered text of the first element matching selector.
func (c *Chromium) Text(selector string) string {
	c.t.Helper()
	return c.do(map[string]any{"op": "text", "selector": selector}).Text
}

// Texts returns the rendered text of every element matching selector.
func (c *Chromium) Texts(selector string) []string {
	c.t.Helper()
	return c.do(map[string]any{"op": "texts", "selector": selector}).Texts
}

// Attr returns an attribute of the first element matching selector ("" when absent).
func (c *Chromium) Attr(selector, name string) string {
	c.t.Helper()
	if v := c.do(map[string]any{"op": "attr", "selector": selector, "name": name}).Value; v != nil {
		return *v
	}
	return ""
}

// Count returns how many elements match selector.
func (c *Chromium) Count(selector string) int {
	c.t.Helper()
	return c.do(map[string]any{"op": "count", "selector": selector}).Count
}

// URL returns the page's URL; Content its HTML.
func (c *Chromium) URL() string {
	c.t.Helper()
	return c.do(map[string]any{"op": "url"}).URL
}

// Content returns the page's HTML.
func (c *Chromium) Content() string {
	c.t.Helper()
	return c.do(map[string]any{"op": "content"}).Content
}

// Screenshot writes a full-page PNG to path.
func (c *Chromium) Screenshot(path string) {
	c.t.Helper()
	c.do(map[string]any{"op": "screenshot", "path": path})
}

// Navigations returns every main-frame navigation response so far, oldest first.
func (c *Chromium) Navigations() []PageResponse {
	c.t.Helper()
	return c.do(map[string]any{"op": "navigations"}).Navigations
}
