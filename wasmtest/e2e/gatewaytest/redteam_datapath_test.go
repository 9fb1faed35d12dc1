package gatewaytest

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// Red-team attacks on the data path of the whole gateway: a real External Token from the
// real OAuth flow, the real token service and the everything-server (MCP Go SDK) upstream
// with a live MCP session. The restricted route allows only test_simple_text; a denied tool
// that ran would answer 200 with a result.

// rawExchange sends a raw HTTP/1.1 request and returns the status and body (status 0 when
// the connection closed without an answer).
func rawExchange(t *testing.T, addr, req string) (int, string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(15 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(b)
}

func TestGateway_RedTeamDataPath(t *testing.T) {
	s := startStack(t)
	c := signIn(t, s, s.RestrictedURL)
	u, _ := url.Parse(s.RestrictedURL)
	addr := u.Host

	// A live MCP session on the restricted route, opened through the gateway.
	init := mcpPost(t, s.RestrictedURL, c.Token.AccessToken, initialize)
	sid := init.Header.Get("Mcp-Session-Id")
	if init.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d, session %q", init.StatusCode, sid)
	}
	req, _ := http.NewRequest(http.MethodPost, s.RestrictedURL, strings.NewReader(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+c.Token.AccessToken)
	req.Header.Set("Mcp-Session-Id", sid)
	if r, err := http.DefaultTransport.RoundTrip(req); err != nil || r.StatusCode >= 300 {
		t.Fatalf("initialized: %v %v", err, r)
	} else {
		r.Body.Close()
	}

	head := func(method, target, host string) string {
		return method + " " + target + " HTTP/1.1\r\nHost: " + host + "\r\nAuthorization: Bearer " + c.Token.AccessToken +
			"\r\nMcp-Session-Id: " + sid + "\r\nMcp-Protocol-Version: 2025-06-18\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"
	}
	withBody := func(method, target, host, body string) string {
		return head(method, target, host) + fmt.Sprintf("Content-Length: %d\r\n\r\n", len(body)) + body
	}
	call := func(members string) string { return `{"jsonrpc":"2.0","id":7,"method":"tools/call",` + members + `}` }
	allowed := call(`"params":{"name":"test_simple_text"}`)
	denied := call(`"params":{"name":"test_error_handling"}`)

	// The baseline: the allowed tool runs, the denied one is refused by the filter.
	if st, body := rawExchange(t, addr, withBody("POST", "/restricted", addr, allowed)); st != 200 || !strings.Contains(body, `"result"`) {
		t.Fatalf("allowed tool: %d %s", st, body)
	}
	if st, body := rawExchange(t, addr, withBody("POST", "/restricted", addr, denied)); st != 200 || !gatewayDenial(body) {
		t.Fatalf("denied tool: %d %s", st, body)
	}

	attacks := []struct{ name, req string }{
		{"DuplicateToolName", withBody("POST", "/restricted", addr, call(`"params":{"name":"test_simple_text","name":"test_error_handling"}`))},
		{"CaseVariantNameKey", withBody("POST", "/restricted", addr, call(`"params":{"Name":"test_error_handling","name":"test_simple_text"}`))},
		{"EscapedDuplicateParams", withBody("POST", "/restricted", addr, call(`"params":{"name":"test_simple_text"},"p\u0061rams":{"name":"test_error_handling"}`))},
		{"TrailingGarbage", withBody("POST", "/restricted", addr, allowed+denied)},
		{"BOM", withBody("POST", "/restricted", addr, "\xef\xbb\xbf"+denied)},
		{"ChunkedWithTrailers", head("POST", "/restricted", addr) + "Transfer-Encoding: chunked\r\nTrailer: X-Sum\r\n\r\n" +
			fmt.Sprintf("%x\r\n%s\r\n0\r\nX-Sum: 1\r\n\r\n", len(denied), denied)},
		{"PercentEncodedRoute", withBody("POST", "/%72estricted", addr, denied)},
		{"UpperCaseRoute", withBody("POST", "/RESTRICTED", addr, denied)},
		{"PathParameter", withBody("POST", "/restricted;x", addr, denied)},
		{"OpenRouteDotSegmentsToRestricted", withBody("POST", "/mcp/../restricted", addr, denied)},
		{"LeadingZeroPort", withBody("POST", "/restricted", strings.Replace(addr, ":", ":0", 1), denied)},
		{"UserinfoHost", withBody("POST", "/restricted", "x@"+addr, denied)},
		{"AbsoluteForm", withBody("POST", "http://"+addr+"/restricted", "elsewhere.example.net", denied)},
	}
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			st, body := rawExchange(t, addr, a.req)
			t.Logf("status %d", st)
			if st == 200 && strings.Contains(body, `"result"`) && !gatewayDenial(body) {
				t.Fatalf("a denied tool ran: %s", body)
			}
		})
	}
	for _, method := range []string{"GET", "DELETE", "post"} {
		t.Run("BodyOn"+method, func(t *testing.T) {
			st, body := rawExchange(t, addr, withBody(method, "/restricted", addr, denied))
			if st == 200 && strings.Contains(body, `"result"`) && !gatewayDenial(body) {
				t.Fatalf("a denied tool ran: %s", body)
			}
		})
	}
}

// gatewayDenial reports whether body is the gateway's own answer to a denied tool call (an
// isError result), not the upstream's.
func gatewayDenial(body string) bool {
	return strings.Contains(body, `"isError":true`) && strings.Contains(body, "Denied by the MCP gateway")
}
