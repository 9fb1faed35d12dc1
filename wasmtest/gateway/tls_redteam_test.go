package gateway_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// Attack: reach the https route over plain http with a Host the route table reads as the
// route's host but the 421 check did not: a trailing dot, a port with leading zeros, user
// information. Each is routed to the https route by the table (pluginconf), so each must be
// refused with 421 like the plain spelling.
func TestRedTeam_PlainHTTPRequestForTheHTTPSHostInAnotherSpellingIs421(t *testing.T) {
	s := startTLSGateway(t)
	hostport := strings.TrimSuffix(strings.TrimPrefix(s.mcpURL, "https://"), "/mcp")
	host, port, _ := strings.Cut(hostport, ":")
	for _, spelling := range []string{
		hostport,
		host + ".:" + port,
		host + ":0" + port,
		"user@" + hostport,
		strings.ToUpper(host) + "..:" + port,
	} {
		t.Run(spelling, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, s.authURL+"/mcp", strings.NewReader(`{}`))
			req.Host = spelling
			req.Header.Set("Authorization", "Bearer abc")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusMisdirectedRequest {
				t.Fatalf("Host %q over plain http: %d %s, want 421", spelling, resp.StatusCode, b)
			}
		})
	}
}
