// Command llmapi is the quick start's stand-in for an LLM API: the separate process an MCP
// application (examples/demoapp) hands the user's External Token (TE) to, so that it calls MCP
// servers through the gateway on the user's behalf (pattern 3, docs/pattern-3-mcp-apps.md). It
// runs no model: it calls the one tool it is asked to, with the official MCP Go SDK client.
//
// It sends the TE only to the gateway origins it is started with (-allow-origin, repeatable):
// a request naming any other server is refused before anything is sent, and redirects are not
// followed, so a TE cannot be steered to another host.
//
// API: POST /v1/tool-call with Authorization: Bearer <TE> and the JSON body
// {"server_url": "...", "tool": "...", "arguments": {...}}. The answer is JSON (see callResult):
// the tool's result, or the error, with the HTTP status the gateway answered when it refused.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

// origins is a repeatable flag.
type origins []string

func (o *origins) String() string { return strings.Join(*o, ",") }
func (o *origins) Set(v string) error {
	*o = append(*o, v)
	return nil
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8413", "listen address")
	var allow origins
	flag.Var(&allow, "allow-origin", "a gateway origin (scheme://host[:port]) the TE may be sent to; repeatable, at least one")
	timeout := flag.Duration("timeout", 15*time.Second, "time allowed for one tool call")
	flag.Parse()
	al, err := newAllowlist(allow)
	if err != nil {
		fmt.Fprintln(os.Stderr, "llmapi: -allow-origin:", err)
		os.Exit(2)
	}
	api := &api{allow: al, timeout: *timeout, logf: log.Printf}
	l, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("LLM API stand-in on http://%s (sends tokens only to %s)", l.Addr(), strings.Join(al.list(), ", "))
	fmt.Printf("READY http://%s\n", l.Addr())
	hs := &http.Server{Handler: api.routes(), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: *timeout + 30*time.Second, IdleTimeout: 2 * time.Minute}
	log.Fatal(hs.Serve(l))
}
