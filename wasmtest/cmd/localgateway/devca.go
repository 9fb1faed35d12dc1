package main

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/url"
	"os"
	"time"
	"unicode/utf8"

	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/wasmtest/devca"
	"github.com/mcpmesh/gateway/wasmtest/gateway"
)

// runDevCA is -dev-ca DIR: it makes (or checks and reuses) the development CA in dir and issues
// a certificate for the https hosts of the configuration at configPath (localhost, 127.0.0.1
// and ::1 without one), then prints the paths to use.
func runDevCA(dir, configPath string, stderr io.Writer) int {
	hosts := []string{"localhost", "127.0.0.1", "::1"}
	if configPath != "" {
		cfg, err := config.Load(configPath)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 2
		}
		hosts = httpsHosts(cfg)
		if len(hosts) == 0 {
			hosts = []string{"localhost", "127.0.0.1", "::1"}
		}
	}
	p, err := devca.Ensure(dir, hosts, time.Now())
	if err != nil {
		fmt.Fprintf(stderr, "localgateway: -dev-ca: %v\n", err)
		return 1
	}
	fmt.Fprintf(stderr, "development CA (loopback only): %s\n  certificate_file: %s\n  certificate_key_file: %s\n  clients: NODE_EXTRA_CA_CERTS=%s SSL_CERT_FILE=%s\n",
		p.CA, p.Cert, p.Key, p.CA, p.CA)
	return 0
}

// httpsHosts are the host names of the configuration's https URLs, each once.
func httpsHosts(cfg *config.Config) []string {
	seen := map[string]bool{}
	var out []string
	urls := []string{cfg.AuthenticateServiceURL}
	for _, r := range cfg.Routes {
		urls = append(urls, r.From)
	}
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil || u.Scheme != "https" || seen[u.Hostname()] {
			continue
		}
		seen[u.Hostname()] = true
		out = append(out, u.Hostname())
	}
	return out
}

// checkCertificate loads certificate_file and certificate_key_file when set, so that a missing
// file or a mismatched pair stops the start with a message naming the keys.
func checkCertificate(cfg *config.Config) error {
	if cfg.CertificateFile == "" {
		return nil
	}
	if _, err := tls.LoadX509KeyPair(cfg.CertificateFile, cfg.CertificateKeyFile); err != nil {
		return fmt.Errorf("certificate_file, certificate_key_file: %w", err)
	}
	return nil
}

// printConfig prints the public URLs of cfg (kind, name, URL) and/or its listen addresses, for
// the quick start's banner and port checks.
func printConfig(cfg *config.Config, urls, addrs bool) {
	if urls {
		writeURLs(os.Stdout, cfg)
	}
	if addrs {
		for _, a := range gateway.AddressesOf(cfg) {
			fmt.Println(a)
		}
	}
}

// writeURLs writes the configuration's public URLs, one per line: kind, name and URL in
// columns as wide as the longest name (the URL is always the last field).
func writeURLs(w io.Writer, cfg *config.Config) {
	type row struct{ kind, name, url string }
	rows := []row{{"authenticate", "(sign-in host)", cfg.AuthenticateServiceURL}}
	for _, r := range cfg.Routes {
		kind := "route"
		if r.MCP != nil && r.MCP.Server != nil {
			kind = "mcp server"
		} else if r.MCP != nil && r.MCP.Client != nil {
			kind = "mcp client"
		}
		name := r.Name
		if name == "" {
			name = "-"
		}
		rows = append(rows, row{kind, name, r.From})
	}
	width := 28
	for _, r := range rows {
		width = max(width, utf8.RuneCountInString(r.name))
	}
	for _, r := range rows {
		fmt.Fprintf(w, "%-14s %-*s %s\n", r.kind, width, r.name, r.url)
	}
}
