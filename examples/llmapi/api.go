package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Limits of the stand-in's own API.
const (
	maxRequestBody = 16 << 10 // the whole POST /v1/tool-call body
	maxToolName    = 128
	maxResultText  = 16 << 10 // text of the result returned to the caller
	maxErrorBody   = 4 << 10  // the part of a gateway refusal kept for the caller
)

// callRequest is the body of POST /v1/tool-call.
type callRequest struct {
	ServerURL string          `json:"server_url"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// callResult is the answer of POST /v1/tool-call.
type callResult struct {
	// OK is true when the tool ran and returned a result (which may itself be an error result:
	// IsError).
	OK      bool   `json:"ok"`
	IsError bool   `json:"is_error,omitempty"`
	Text    string `json:"text,omitempty"`
	// Denied is true when the gateway refused the call: an HTTP 401 or 403, or a tool result
	// the gateway wrote in the tool's place (marked by the _meta member deniedMetaKey).
	Denied bool `json:"denied,omitempty"`
	// Error says why there is no result; GatewayStatus is the HTTP status of the refusal
	// (e.g. 403 from the gateway's policy) and GatewayBody the start of its body.
	Error         string `json:"error,omitempty"`
	GatewayStatus int    `json:"gateway_status,omitempty"`
	GatewayBody   string `json:"gateway_body,omitempty"`
}

// deniedMetaKey is the _meta member of a tool result that the gateway wrote in the tool's
// place when its policy denied the call (docs/filter.md).
const deniedMetaKey = "dev.mcpmesh/denial"

// allowlist is the set of origins the stand-in sends tokens to.
type allowlist map[string]bool

// newAllowlist parses origins given as scheme://host[:port] (no path, query, user info).
func newAllowlist(origins []string) (allowlist, error) {
	if len(origins) == 0 {
		return nil, errors.New("at least one origin is required")
	}
	al := allowlist{}
	for _, o := range origins {
		u, err := url.Parse(o)
		if err != nil || u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
			return nil, fmt.Errorf("%q is not an origin (scheme://host[:port])", o)
		}
		key, err := originOf(u)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", o, err)
		}
		al[key] = true
	}
	return al, nil
}

func (al allowlist) list() []string {
	out := make([]string, 0, len(al))
	for o := range al {
		out = append(out, o)
	}
	sort.Strings(out)
	return out
}

// allows reports whether u is on an allowed origin.
func (al allowlist) allows(u *url.URL) bool {
	key, err := originOf(u)
	return err == nil && al[key]
}

// originOf returns u's origin with a lower-case scheme and host and an explicit port.
func originOf(u *url.URL) (string, error) {
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	switch scheme {
	case "http":
		if port == "" {
			port = "80"
		}
	case "https":
		if port == "" {
			port = "443"
		}
	default:
		return "", errors.New("the scheme must be http or https")
	}
	host := strings.ToLower(u.Hostname())
	if host == "" || u.User != nil {
		return "", errors.New("no host, or user info in the URL")
	}
	return scheme + "://" + net.JoinHostPort(host, port), nil
}

// parseCallRequest decodes and checks a tool-call request against the allowlist.
func parseCallRequest(body []byte, al allowlist) (callRequest, *url.URL, error) {
	var req callRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return req, nil, fmt.Errorf("the body is not a tool-call request: %v", err)
	}
	if dec.More() {
		return req, nil, errors.New("the body has data after the JSON object")
	}
	u, err := url.Parse(req.ServerURL)
	if err != nil || !u.IsAbs() || u.Fragment != "" {
		return req, nil, errors.New("server_url must be an absolute URL without a fragment")
	}
	if !al.allows(u) {
		return req, nil, errors.New("server_url is not on a gateway origin this API sends tokens to")
	}
	if req.Tool == "" || len(req.Tool) > maxToolName {
		return req, nil, fmt.Errorf("tool must be 1 to %d bytes", maxToolName)
	}
	if len(req.Arguments) > 0 && !bytes.Equal(req.Arguments, []byte("null")) {
		var obj map[string]any
		if err := json.Unmarshal(req.Arguments, &obj); err != nil {
			return req, nil, errors.New("arguments must be a JSON object")
		}
	}
	return req, u, nil
}

// api serves the stand-in's HTTP API.
type api struct {
	allow   allowlist
	timeout time.Duration
	logf    func(format string, args ...any)
	// transport is the base of every outgoing request (nil: a clone of the default).
	transport http.RoundTripper
}

func (a *api) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/tool-call", a.toolCall)
	return mux
}

func writeResult(w http.ResponseWriter, status int, res callResult) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(res)
}

func (a *api) toolCall(w http.ResponseWriter, r *http.Request) {
	scheme, te, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	te = strings.TrimSpace(te)
	if !ok || !strings.EqualFold(scheme, "Bearer") || te == "" {
		writeResult(w, http.StatusUnauthorized, callResult{Error: "send the user's token as Authorization: Bearer <token>"})
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBody))
	if err != nil {
		writeResult(w, http.StatusRequestEntityTooLarge, callResult{Error: fmt.Sprintf("the body is over %d bytes", maxRequestBody)})
		return
	}
	req, u, err := parseCallRequest(body, a.allow)
	if err != nil {
		writeResult(w, http.StatusBadRequest, callResult{Error: err.Error()})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), a.timeout)
	defer cancel()
	res := a.call(ctx, u, te, req)
	a.logf("tool-call %s %q: ok=%v is_error=%v gateway_status=%d", u.Redacted(), req.Tool, res.OK, res.IsError, res.GatewayStatus)
	writeResult(w, http.StatusOK, res)
}

// call runs one MCP session against u with te: initialize, tools/call, close.
func (a *api) call(ctx context.Context, u *url.URL, te string, req callRequest) callResult {
	base := a.transport
	if base == nil {
		base = http.DefaultTransport.(*http.Transport).Clone()
	}
	rt := &bearerTransport{base: base, token: te, allow: a.allow}
	hc := &http.Client{
		Transport: rt,
		// A redirect could carry the token elsewhere: never follow one.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "llm-api-stand-in", Version: "1.0.0"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: u.String(), HTTPClient: hc, MaxRetries: -1, DisableStandaloneSSE: true,
	}, nil)
	if err != nil {
		return rt.failure("connect", err)
	}
	defer cs.Close()
	params := &mcp.CallToolParams{Name: req.Tool}
	if len(req.Arguments) > 0 && !bytes.Equal(req.Arguments, []byte("null")) {
		params.Arguments = req.Arguments
	}
	out, err := cs.CallTool(ctx, params)
	if err != nil {
		return rt.failure("tools/call", err)
	}
	var text strings.Builder
	for _, c := range out.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			if text.Len() > 0 {
				text.WriteByte('\n')
			}
			text.WriteString(t.Text)
		}
	}
	_, denied := out.Meta[deniedMetaKey]
	return callResult{OK: true, IsError: out.IsError, Denied: out.IsError && denied, Text: truncate(text.String(), maxResultText)}
}

// bearerTransport adds the token to requests to allowed origins (and refuses the others),
// and remembers the last refusal the gateway answered.
type bearerTransport struct {
	base  http.RoundTripper
	token string
	allow allowlist

	mu         sync.Mutex
	lastStatus int
	lastBody   string
}

func (t *bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if !t.allow.allows(r.URL) {
		return nil, errors.New("refusing to send the token to an origin outside the allowlist")
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+t.token)
	resp, err := t.base.RoundTrip(r)
	if err != nil || resp.StatusCode < 400 {
		return resp, err
	}
	// Keep the start of a refusal for the caller and hand the SDK the same bytes.
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	rest := resp.Body
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(b), rest), rest}
	if r.Method == http.MethodPost {
		t.mu.Lock()
		t.lastStatus, t.lastBody = resp.StatusCode, string(b)
		t.mu.Unlock()
	}
	return resp, nil
}

// failure describes a call that got no result.
func (t *bearerTransport) failure(step string, err error) callResult {
	t.mu.Lock()
	defer t.mu.Unlock()
	return callResult{
		Denied:        t.lastStatus == http.StatusUnauthorized || t.lastStatus == http.StatusForbidden,
		Error:         truncate(step+": "+err.Error(), maxErrorBody),
		GatewayStatus: t.lastStatus,
		GatewayBody:   truncate(t.lastBody, maxErrorBody),
	}
}

// truncate cuts s to at most n bytes (and valid UTF-8).
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
