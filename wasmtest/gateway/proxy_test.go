package gateway_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The proxies copy responses through buffers they reuse across requests: every client gets
// exactly its own upstream answer, never bytes of another's, while answers of many sizes
// (smaller and larger than a buffer, of known and unknown length, in one write or several)
// go through the gateway concurrently.
func TestGateway_PooledCopyBuffersLeakNothingBetweenResponses(t *testing.T) {
	t.Parallel()
	// answer is the upstream's answer to the request with id: its own text, of a size that
	// depends on id.
	answer := func(id int) []byte {
		text := strings.Repeat(fmt.Sprintf("<%d>", id), 1+(id*7919)%(20000))
		return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":%q}],"isError":false}}`, id, text)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	up := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID int `json:"id"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		b := answer(req.ID)
		w.Header().Set("Content-Type", "application/json")
		if req.ID%2 == 0 {
			w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		}
		half := len(b) / 2
		w.Write(b[:half])
		if req.ID%3 == 0 {
			w.(http.Flusher).Flush() // the rest comes in a later read
		}
		w.Write(b[half:])
	})}
	go up.Serve(l)
	t.Cleanup(func() { up.Close() })
	mcpURL, _, ts := startGateway(t, "http://"+l.Addr().String()+"/mcp")
	token := seedToken(t, ts.Store())
	client := &http.Client{Timeout: 20 * time.Second}

	const clients, each = 4, 15
	var wg sync.WaitGroup
	errs := make(chan error, clients*each)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				id := 1 + c*each + i
				body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo"}}`, id)
				req, _ := http.NewRequest(http.MethodPost, mcpURL, strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+token)
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				if err != nil {
					errs <- err
					return
				}
				got, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if want := answer(id); err != nil || resp.StatusCode != http.StatusOK || !bytes.Equal(got, want) {
					errs <- fmt.Errorf("id %d: status %d, %d bytes (want %d), %v: %.120q", id, resp.StatusCode, len(got), len(want), err, got)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
