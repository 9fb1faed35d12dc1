// Command demoapp is the quick start's MCP-enabled application (pattern 3,
// docs/pattern-3-mcp-apps.md), behind an mcp.client route. It is a server-rendered page that
// shows what an application behind the gateway can do:
//
//   - who is signed in, from X-Gateway-Assertion verified with sdk/go/assertion against the
//     gateway's JWKS (a request without a valid assertion gets 401 and nothing else);
//   - the MCP servers the user may use, from GET /.gateway/mcp/routes with the External Token
//     (TE) the gateway hands the app as Authorization: Bearer, as a table with their connected
//     state and Connect / Disconnect links to the gateway's upstream OAuth endpoints on each
//     server's host, which return the browser here;
//   - a form (CSRF-protected) that calls a tool: the app hands the TE to a separate process,
//     the LLM API stand-in (examples/llmapi), which calls the MCP server through the gateway,
//     and the page shows the result or the gateway's refusal.
//
// Everything shown is escaped by html/template.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/mcpmesh/gateway/sdk/go/assertion"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8411", "listen address")
	gateway := flag.String("gateway", "http://127.0.0.3:8402", "this app's public URL: the from of its mcp.client route")
	issuer := flag.String("issuer", "http://127.0.0.1:8400", "the gateway's authenticate_service_url (the assertion's iss)")
	jwks := flag.String("jwks", "", "the gateway's JWKS URL (default: <gateway>/.well-known/gateway/jwks.json)")
	llm := flag.String("llmapi", "http://127.0.0.1:8413", "the LLM API stand-in (examples/llmapi)")
	flag.Parse()
	app, err := newApp(options{Gateway: *gateway, Issuer: *issuer, JWKS: *jwks, LLMAPI: *llm})
	if err != nil {
		fmt.Fprintln(os.Stderr, "demoapp:", err)
		os.Exit(2)
	}
	l, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("demo app on http://%s (public URL %s)", l.Addr(), *gateway)
	fmt.Printf("READY http://%s\n", l.Addr())
	hs := &http.Server{Handler: app.routes(), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 2 * time.Minute, IdleTimeout: 2 * time.Minute}
	log.Fatal(hs.Serve(l))
}

// options configure the app.
type options struct {
	Gateway, Issuer, JWKS, LLMAPI string
	// Client makes the app's outgoing requests (default: 30 s timeout, longer than the LLM API
	// stand-in's own 15 s for a tool call).
	Client *http.Client
}

func newApp(o options) (*app, error) {
	pub, err := url.Parse(o.Gateway)
	if err != nil || (pub.Scheme != "http" && pub.Scheme != "https") || pub.Host == "" || pub.User != nil || pub.RawQuery != "" {
		return nil, fmt.Errorf("-gateway %q: want the app's public URL, http(s)://host[:port][/path]", o.Gateway)
	}
	if o.JWKS == "" {
		o.JWKS = pub.Scheme + "://" + pub.Host + "/.well-known/gateway/jwks.json"
	}
	llm, err := url.Parse(o.LLMAPI)
	if err != nil || (llm.Scheme != "http" && llm.Scheme != "https") || llm.Host == "" {
		return nil, fmt.Errorf("-llmapi %q: want http(s)://host[:port]", o.LLMAPI)
	}
	client := o.Client
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	v, err := assertion.NewVerifier(assertion.Config{JWKSURL: o.JWKS, Issuer: o.Issuer, Audience: pub.Host, HTTPClient: client})
	if err != nil {
		return nil, fmt.Errorf("assertion verifier: %w", err)
	}
	key, err := newCSRFKey()
	if err != nil {
		return nil, err
	}
	return &app{public: pub, verifier: v, llmapi: llm, client: client, csrf: key}, nil
}
