package gateway_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/wasmtest/gateway"
)

// Many clients at once, each with its own large header set (a name with several values, many
// distinct names, values near the header limit in all) and its own request body (within one
// read and across several): every upstream request carries exactly its client's headers, in
// order, and its client's body, never another's. The host hands released headers and body
// buffers to the proxy without copies and serializes header maps straight into the guest's
// memory, which grows as these maps are copied in.
func TestGateway_RedTeamRequestsKeepTheirOwnHeadersAndBodies(t *testing.T) {
	t.Parallel()
	const names = 40
	headersOf := func(id int) http.Header {
		h := http.Header{"X-Client": {fmt.Sprint(id)}, "X-Dup": {fmt.Sprintf("%d-a", id), fmt.Sprintf("%d-b", id), fmt.Sprintf("%d-c", id)}}
		for i := range names {
			h[fmt.Sprintf("X-Many-%d", i)] = []string{fmt.Sprintf("%d-%d-", id, i) + strings.Repeat("v", 1000)}
		}
		return h
	}
	bodyOf := func(id int) string {
		pad := strings.Repeat(fmt.Sprintf("%d.", id), 1+(id%3)*12000) // up to ~100 KiB: over a read of 32 KiB
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list","params":{"_meta":{"pad":%q}}}`, id, pad)
	}
	var mu sync.Mutex
	var problems []string
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	up := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var id int
		fmt.Sscan(r.Header.Get("X-Client"), &id)
		var bad []string
		if string(b) != bodyOf(id) {
			bad = append(bad, fmt.Sprintf("client %d: body of %d bytes, want %d: %.60q", id, len(b), len(bodyOf(id)), b))
		}
		for k, want := range headersOf(id) {
			if got := r.Header[k]; !slices.Equal(got, want) {
				bad = append(bad, fmt.Sprintf("client %d: %s = %.40q, want %.40q", id, k, got, want))
			}
		}
		mu.Lock()
		problems = append(problems, bad...)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%d,"result":{"tools":[]}}`, id)
	})}
	go up.Serve(l)
	t.Cleanup(func() { up.Close() })
	mcpURL, _, ts := startGateway(t, "http://"+l.Addr().String()+"/mcp", func(o *gateway.Options) {
		o.Config.Routes[0].MCP.Server.MaxRequestBytes = 1 << 20
	})
	token := seedToken(t, ts.Store())
	client := &http.Client{Timeout: 30 * time.Second}

	const clients, each = 4, 6
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				id := 1 + c*each + i
				req, _ := http.NewRequest(http.MethodPost, mcpURL, strings.NewReader(bodyOf(id)))
				req.Header = headersOf(id)
				req.Header.Set("Authorization", "Bearer "+token)
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				if err != nil {
					mu.Lock()
					problems = append(problems, fmt.Sprintf("client %d: %v", id, err))
					mu.Unlock()
					return
				}
				got, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if want := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"tools":[]}}`, id); resp.StatusCode != 200 || string(got) != want {
					mu.Lock()
					problems = append(problems, fmt.Sprintf("client %d: status %d %.100q", id, resp.StatusCode, got))
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	for _, p := range problems {
		t.Error(p)
	}
}
