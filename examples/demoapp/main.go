// Command demoapp is the quick start's MCP client application, behind an mcp.client route. It
// shows what the gateway hands a backend: the External Token in Authorization (which it may
// give to an LLM API) and the identity assertion, and it lists the MCP servers the user can
// reach through GET /.gateway/mcp/routes on its own host.
package main

import (
	"flag"
	"fmt"
	"html"
	"io"
	"log"
	"net/http"
	"strings"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8411", "listen address")
	gateway := flag.String("gateway", "http://127.0.0.3:8402", "this app's public URL (the mcp.client route)")
	flag.Parse()
	client := &http.Client{Timeout: 5 * time.Second}
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		te := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		servers := "(no External Token received)"
		if te != "" {
			req, _ := http.NewRequestWithContext(r.Context(), http.MethodGet, *gateway+"/.gateway/mcp/routes", nil)
			req.Header.Set("Authorization", "Bearer "+te)
			req.Header.Set("Accept", "application/json")
			if resp, err := client.Do(req); err != nil {
				servers = "listing failed: " + err.Error()
			} else {
				b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
				resp.Body.Close()
				servers = resp.Status + " " + string(b)
			}
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<h1>Demo MCP client app</h1><p>External Token received: %v</p><p>Assertion: <code>%s</code></p><p>MCP servers: <code>%s</code></p>",
			te != "", html.EscapeString(r.Header.Get("X-Gateway-Assertion")), html.EscapeString(servers))
	})
	log.Printf("demo app on http://%s", *addr)
	log.Fatal((&http.Server{Addr: *addr, ReadHeaderTimeout: 10 * time.Second}).ListenAndServe())
}
