// Command toollock writes or checks the tool lock file of a pinned MCP server route
// (docs/tool-pinning.md):
//
//	go run ./wasmtest/cmd/toollock -config examples/gateway.yaml -route "Demo MCP server"
//
// It connects to the route's upstream (its to URL, or -url), lists every tool over MCP's
// streamable HTTP transport, and writes the lock — each tool's name, digest and the members
// the digest covers — to the route's mcp.server.tool_lock.file (or -o; "-" is standard
// output). With -check it writes nothing and reports how the server differs from the lock.
// Review the lock (or its diff) before committing it: it is what the gateway will trust.
//
// Exit status: 0 on success (-check: no difference), 1 when the server cannot be read or
// -check finds a difference, 2 for bad flags or a bad configuration.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/shared/tooldigest"
	"github.com/mcpmesh/gateway/wasmtest/toollock"
	"gopkg.in/yaml.v3"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

type headers []string

func (h *headers) String() string     { return strings.Join(*h, ", ") }
func (h *headers) Set(v string) error { *h = append(*h, v); return nil }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("toollock", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "gateway configuration file")
	routeName := fs.String("route", "", "the route (its name or from URL) whose server to lock")
	urlFlag := fs.String("url", "", "MCP endpoint to read (default: the route's to URL)")
	out := fs.String("o", "", "lock file to write (default: the route's mcp.server.tool_lock.file; - for standard output)")
	check := fs.Bool("check", false, "compare the server with the lock file instead of writing it")
	timeout := fs.Duration("timeout", 30*time.Second, "bound on the whole exchange")
	var hs headers
	fs.Var(&hs, "header", "header sent with every request, as 'Name: value' (repeatable)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "toollock: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	endpoint, lockFile := *urlFlag, *out
	if *configPath != "" || *routeName != "" {
		if *configPath == "" || *routeName == "" {
			fmt.Fprintln(stderr, "toollock: -config and -route go together")
			return 2
		}
		cfg, err := config.Load(*configPath)
		if err != nil && !*check {
			// A lock file that does not match yet (or does not exist) is what this command
			// fixes: read the configuration without it.
			cfg, err = loadWithoutLock(*configPath)
		}
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 2
		}
		r := findRoute(cfg, *routeName)
		if r == nil {
			fmt.Fprintf(stderr, "toollock: no route named %q in %s\n", *routeName, *configPath)
			return 2
		}
		if r.MCP == nil || r.MCP.Server == nil {
			fmt.Fprintf(stderr, "toollock: route %q is not an mcp.server route\n", *routeName)
			return 2
		}
		if endpoint == "" {
			endpoint = r.To
		}
		if lockFile == "" && r.MCP.Server.ToolLock != nil {
			lockFile = r.MCP.Server.ToolLock.File
			if !filepath.IsAbs(lockFile) {
				lockFile = filepath.Join(filepath.Dir(*configPath), lockFile)
			}
		}
	}
	if endpoint == "" {
		fmt.Fprintln(stderr, "toollock: give -config and -route, or -url")
		return 2
	}
	if lockFile == "" {
		lockFile = "-"
	}
	header := http.Header{}
	for _, h := range hs {
		name, value, ok := strings.Cut(h, ":")
		if !ok || strings.TrimSpace(name) == "" {
			fmt.Fprintf(stderr, "toollock: -header %q: want 'Name: value'\n", h)
			return 2
		}
		header.Add(strings.TrimSpace(name), strings.TrimSpace(value))
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	c := &toollock.Client{URL: endpoint, Header: header}
	server, tools, err := c.Tools(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "toollock: %s: %v\n", endpoint, err)
		return 1
	}
	lock, err := tooldigest.NewLock(server, tools)
	if err != nil {
		fmt.Fprintf(stderr, "toollock: %s: %v\n", endpoint, err)
		return 1
	}
	if *check {
		return checkLock(lock, lockFile, stdout, stderr)
	}
	if lockFile == "-" {
		_, _ = stdout.Write(lock.Marshal())
		return 0
	}
	if err := os.WriteFile(lockFile, lock.Marshal(), 0o644); err != nil {
		fmt.Fprintf(stderr, "toollock: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "toollock: %d tools of %s (%s) written to %s\n", len(lock.Tools), endpoint, server, lockFile)
	return 0
}

// checkLock reports how the server's tools differ from the lock file.
func checkLock(lock *tooldigest.Lock, file string, stdout, stderr io.Writer) int {
	if file == "-" {
		fmt.Fprintln(stderr, "toollock: -check needs a lock file (-o or the route's tool_lock.file)")
		return 2
	}
	b, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintf(stderr, "toollock: %v\n", err)
		return 2
	}
	pinned, err := tooldigest.ParseLock(b)
	if err != nil {
		fmt.Fprintf(stderr, "toollock: %s: %v\n", file, err)
		return 2
	}
	var diffs []string
	seen := map[string]bool{}
	for _, t := range lock.Tools {
		seen[t.Name] = true
		switch d, ok := pinned[t.Name]; {
		case !ok:
			diffs = append(diffs, "new tool "+t.Name)
		case d != t.Digest:
			diffs = append(diffs, "changed definition of "+t.Name)
		}
	}
	for name := range pinned {
		if !seen[name] {
			diffs = append(diffs, "tool "+name+" is no longer listed")
		}
	}
	sort.Strings(diffs)
	if len(diffs) == 0 {
		fmt.Fprintf(stdout, "toollock: the server's %d tools match %s\n", len(lock.Tools), file)
		return 0
	}
	for _, d := range diffs {
		fmt.Fprintln(stdout, d)
	}
	return 1
}

func findRoute(cfg *config.Config, name string) *config.Route {
	for i := range cfg.Routes {
		r := &cfg.Routes[i]
		if r.Name == name || r.From == name || r.Normalized().ID == name {
			return r
		}
	}
	return nil
}

// loadWithoutLock reads the routes of the configuration without validating it: a lock file
// that is missing or stale must not keep this command from writing a new one. (The gateway
// still loads the configuration strictly.)
func loadWithoutLock(path string) (*config.Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var cfg config.Config
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &cfg, nil
}
