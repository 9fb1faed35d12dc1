package gatewaytest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/mcpmesh/gateway/wasmtest/e2e/harness"
)

// Helpers of the red-team tests against the TypeScript SDK upstreams (ts-servers.mjs).

// tsProtocol is the MCP revision @modelcontextprotocol/sdk 1.32 speaks (its event store primes
// SSE streams with an event ID only from this revision on).
const tsProtocol = "2025-11-25"

// mcpReply is what a client saw for one HTTP request.
type mcpReply struct {
	Status int
	Header http.Header
	Body   string
}

// result returns the first JSON-RPC message with a result or error in the reply, from a JSON
// body or from the data lines of an SSE body (nil if none).
func (r mcpReply) result() map[string]any {
	try := func(s string) map[string]any {
		var m map[string]any
		if json.Unmarshal([]byte(s), &m) != nil {
			return nil
		}
		if _, ok := m["result"]; ok {
			return m
		}
		if _, ok := m["error"]; ok {
			return m
		}
		return nil
	}
	if m := try(r.Body); m != nil {
		return m
	}
	for _, line := range strings.Split(r.Body, "\n") {
		if d, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), "data:"); ok {
			if m := try(strings.TrimSpace(d)); m != nil {
				return m
			}
		}
	}
	return nil
}

// text returns the text of the first content item of a tool result ("" if none).
func (r mcpReply) text() string {
	m := r.result()
	res, _ := m["result"].(map[string]any)
	content, _ := res["content"].([]any)
	if len(content) == 0 {
		return ""
	}
	item, _ := content[0].(map[string]any)
	s, _ := item["text"].(string)
	return s
}

// eventIDs returns the SSE event IDs in the reply body.
func (r mcpReply) eventIDs() []string {
	var ids []string
	for _, line := range strings.Split(r.Body, "\n") {
		if id, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), "id:"); ok {
			ids = append(ids, strings.TrimSpace(id))
		}
	}
	return ids
}

// mcpDo sends one request to an MCP endpoint: a bearer token and a session ID unless empty,
// the MCP Accept and protocol headers, extra headers (which replace those), and body. A GET
// answered with an SSE stream is read for at most streamFor and then closed.
func mcpDo(t *testing.T, method, url, token, sid string, extra http.Header, body []byte) mcpReply {
	t.Helper()
	const streamFor = 700 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", tsProtocol)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	for k, v := range extra {
		req.Header[k] = v
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	var b []byte
	if method == http.MethodGet && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b = readFor(resp.Body, streamFor)
	} else {
		b, _ = io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	}
	return mcpReply{Status: resp.StatusCode, Header: resp.Header, Body: string(b)}
}

// readFor reads r for at most d (the caller closes r afterwards to end the read).
func readFor(r io.ReadCloser, d time.Duration) []byte {
	var buf bytes.Buffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		chunk := make([]byte, 4096)
		for {
			n, err := r.Read(chunk)
			buf.Write(chunk[:n]) // read only after done is closed
			if err != nil {
				return
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(d):
		r.Close()
		<-done
	}
	return buf.Bytes()
}

// openSession initializes an MCP session at url with token and returns the session ID the
// client got.
func openSession(t *testing.T, url, token, protocol string) string {
	t.Helper()
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + protocol +
		`","capabilities":{},"clientInfo":{"name":"e2e-redteam","version":"1"}}}`
	r := mcpDo(t, http.MethodPost, url, token, "", http.Header{"Mcp-Protocol-Version": nil}, []byte(init))
	sid := r.Header.Get("Mcp-Session-Id")
	if r.Status != http.StatusOK || sid == "" || r.result() == nil {
		t.Fatalf("initialize at %s: %d, session %q, body %.300s", url, r.Status, sid, r.Body)
	}
	n := mcpDo(t, http.MethodPost, url, token, sid, http.Header{"Mcp-Protocol-Version": {protocol}},
		[]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	if n.Status != http.StatusAccepted {
		t.Fatalf("notifications/initialized at %s: %d %.300s", url, n.Status, n.Body)
	}
	return sid
}

// toolCall returns a tools/call request body.
func toolCall(id int, name string, args map[string]any) []byte {
	m := map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": map[string]any{"name": name, "arguments": args}}
	b, _ := json.Marshal(m)
	return b
}

// callTool calls a tool in session sid and returns the reply.
func callTool(t *testing.T, url, token, sid, protocol, name string, args map[string]any) mcpReply {
	t.Helper()
	return mcpDo(t, http.MethodPost, url, token, sid, http.Header{"Mcp-Protocol-Version": {protocol}}, toolCall(9, name, args))
}

// runsSince returns the tool runs logged after the first n.
func runsSince(l harness.TSLog, n int) []harness.TSRun {
	if n > len(l.Runs) {
		return nil
	}
	return l.Runs[n:]
}

// waitRun polls the TS servers' log until a run with tool and args.text == text appears, up
// to d, and returns it (ok false if none did).
func waitRun(t *testing.T, ts *harness.TSServers, tool, text string, d time.Duration) (harness.TSRun, bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		for _, r := range ts.Log(t).Runs {
			if r.Tool == tool && r.Args["text"] == text {
				return r, true
			}
		}
		if time.Now().After(deadline) {
			return harness.TSRun{}, false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// utf7 encodes s entirely as one UTF-7 shifted sequence ("+…-"), or with imap, as modified
// UTF-7 of RFC 3501 ("&…-", "," for "/"). ASCII readers see only letters, digits, "+", "/"
// (or "&", ",") and "-".
func utf7(s string, imap bool) string {
	u := utf16.Encode([]rune(s))
	b := make([]byte, 2*len(u))
	for i, c := range u {
		binary.BigEndian.PutUint16(b[2*i:], c)
	}
	enc := base64.RawStdEncoding.EncodeToString(b)
	if imap {
		return "&" + strings.ReplaceAll(enc, "/", ",") + "-"
	}
	return "+" + enc + "-"
}

// utf16Bytes encodes s in UTF-16 (big- or little-endian), with a byte order mark if bom.
func utf16Bytes(s string, big, bom bool) []byte {
	var order binary.ByteOrder = binary.LittleEndian
	if big {
		order = binary.BigEndian
	}
	u := utf16.Encode([]rune(s))
	if bom {
		u = append([]uint16{0xfeff}, u...)
	}
	b := make([]byte, 2*len(u))
	for i, c := range u {
		order.PutUint16(b[2*i:], c)
	}
	return b
}

// utf32Bytes encodes s in UTF-32 (big- or little-endian), with a byte order mark if bom.
func utf32Bytes(s string, big, bom bool) []byte {
	var order binary.ByteOrder = binary.LittleEndian
	if big {
		order = binary.BigEndian
	}
	r := []rune(s)
	if bom {
		r = append([]rune{0xfeff}, r...)
	}
	b := make([]byte, 4*len(r))
	for i, c := range r {
		order.PutUint32(b[4*i:], uint32(c))
	}
	return b
}

// legacySession is a legacy HTTP+SSE session: the open SSE stream and the POST URL its
// endpoint event named.
type legacySession struct {
	// PostURL is the origin of the SSE URL plus the endpoint event's path and query.
	PostURL string
	// SessionID is the sessionId query parameter of PostURL.
	SessionID string
	events    chan string // data of the message events, in order
	cancel    context.CancelFunc
}

// openLegacy opens GET sseURL (with token unless empty), reads the endpoint event, keeps
// reading the stream's message events in the background, and initializes the session. The
// stream closes when the test ends.
func openLegacy(t *testing.T, sseURL, origin, token string) *legacySession {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, sseURL, nil)
	req.Header.Set("Accept", "text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatalf("GET %s: %v", sseURL, err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		t.Fatalf("GET %s: %d %s", sseURL, resp.StatusCode, b)
	}
	ls := &legacySession{events: make(chan string, 1024), cancel: cancel}
	endpoint := make(chan string, 1)
	go func() {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		var event string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event:"):
				event = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
			case strings.HasPrefix(line, "data:"):
				data := strings.TrimSpace(strings.TrimPrefix(line, "data:"))
				if event == "endpoint" {
					endpoint <- data
				} else {
					select {
					case ls.events <- data:
					default:
					}
				}
			case line == "":
				event = ""
			}
		}
	}()
	select {
	case ep := <-endpoint:
		ls.PostURL = origin + ep
		_, q, _ := strings.Cut(ep, "?sessionId=")
		ls.SessionID = q
	case <-time.After(10 * time.Second):
		t.Fatalf("GET %s: no endpoint event", sseURL)
	}
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + tsProtocol +
		`","capabilities":{},"clientInfo":{"name":"e2e-redteam","version":"1"}}}`
	if r := legacyPost(t, ls.PostURL, token, "application/json", []byte(init)); r.Status != http.StatusAccepted {
		t.Fatalf("legacy initialize: %d %s", r.Status, r.Body)
	}
	if r := legacyPost(t, ls.PostURL, token, "application/json", []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); r.Status != http.StatusAccepted {
		t.Fatalf("legacy initialized: %d %s", r.Status, r.Body)
	}
	return ls
}

// legacyPost POSTs a message to a legacy session's endpoint with the given Content-Type.
func legacyPost(t *testing.T, postURL, token, contentType string, body []byte) mcpReply {
	t.Helper()
	return mcpDo(t, http.MethodPost, postURL, token, "", http.Header{"Content-Type": {contentType}, "Mcp-Protocol-Version": nil}, body)
}

// waitEvent waits up to d for a message event on the legacy stream containing substr.
func (ls *legacySession) waitEvent(substr string, d time.Duration) (string, bool) {
	timeout := time.After(d)
	for {
		select {
		case e := <-ls.events:
			if strings.Contains(e, substr) {
				return e, true
			}
		case <-timeout:
			return "", false
		}
	}
}
