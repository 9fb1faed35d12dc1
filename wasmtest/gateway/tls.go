package gateway

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// addressSchemes returns the scheme of each listen address ("http" or "https"): the scheme of
// the URLs (routes' from, authenticate_service_url) on it. One address cannot serve both.
func addressSchemes(raws []string) (map[string]string, error) {
	out := map[string]string{}
	for _, raw := range raws {
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" {
			continue
		}
		a := strings.ToLower(u.Host)
		if u.Port() == "" {
			a = net.JoinHostPort(strings.ToLower(u.Hostname()), map[string]string{"http": "80", "https": "443"}[u.Scheme])
		}
		if s, ok := out[a]; ok && s != u.Scheme {
			return nil, fmt.Errorf("gateway: %s is both http and https (%s); one address serves one scheme", a, raw)
		}
		out[a] = u.Scheme
	}
	return out, nil
}

// loadCertificate loads the configured certificate when an address is https. It is an error
// to have https addresses and no certificate.
func (g *Gateway) loadCertificate() error {
	var https []string
	for a, s := range g.schemes {
		if s == "https" {
			https = append(https, a)
		}
	}
	if len(https) == 0 {
		return nil
	}
	if g.cfg.CertificateFile == "" {
		return fmt.Errorf("gateway: certificate_file and certificate_key_file are required: %s is https (localgateway -dev-ca DIR makes a development certificate, docs/clients.md#tls)", strings.Join(https, ", "))
	}
	c, err := tls.LoadX509KeyPair(g.cfg.CertificateFile, g.cfg.CertificateKeyFile)
	if err != nil {
		return fmt.Errorf("gateway: certificate_file, certificate_key_file: %w", err)
	}
	g.cert = &c
	return nil
}

// listenerIsTLS reports whether l listens on an https address: its address, or a loopback
// address for a "localhost" URL on the same port.
func (g *Gateway) listenerIsTLS(l net.Listener) bool {
	addr := l.Addr().String()
	_, port, _ := net.SplitHostPort(addr)
	ip := net.ParseIP(strings.Trim(strings.TrimSuffix(addr, ":"+port), "[]"))
	for a, s := range g.schemes {
		if s != "https" {
			continue
		}
		h, p, err := net.SplitHostPort(a)
		if err != nil || p != port {
			continue
		}
		if a == addr || h == "localhost" && ip != nil && ip.IsLoopback() {
			return true
		}
		if hip := net.ParseIP(h); hip != nil && ip != nil && hip.Equal(ip) {
			return true
		}
	}
	return false
}

// tlsConfig serves TLS 1.2 and later, HTTP/2 and HTTP/1.1, with the certificate that cert
// returns at each handshake (a reload replaces it for new connections).
func tlsConfig(cert func() *tls.Certificate) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"h2", "http/1.1"},
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			if c := cert(); c != nil {
				return c, nil
			}
			return nil, fmt.Errorf("no certificate configured")
		},
	}
}

// misdirected answers 421 when r came over plain http to an https host, or over TLS to an
// http one: a client must not be served, nor send credentials, over the scheme the
// configuration does not name for the host. Hosts of no route are left to the filter.
func (g *Gateway) misdirected(w http.ResponseWriter, r *http.Request) bool {
	scheme, ok := g.schemes[schemeKey(r.Host, r.TLS != nil)]
	if !ok || (scheme == "https") == (r.TLS != nil) {
		return false
	}
	writeError(w, http.StatusMisdirectedRequest, "misdirected_request", "this host is served over "+scheme+" only")
	return true
}

// schemeKey is the g.schemes key of a request's Host, spelled as the route table reads it
// (pluginconf.Table.Match): lower case, without user information, without trailing dots on
// the host name, the port in canonical decimal form, or the connection's default port when
// there is none. Any other spelling would let a request reach a route over the scheme the
// configuration does not name for it.
func schemeKey(authority string, isTLS bool) string {
	a := strings.ToLower(authority)
	if i := strings.LastIndexByte(a, '@'); i >= 0 {
		a = a[i+1:]
	}
	host, port := a, ""
	if i := strings.LastIndexByte(a, ':'); i >= 0 && !strings.Contains(a[i:], "]") {
		host, port = a[:i], a[i+1:]
	}
	host = strings.TrimRight(strings.Trim(host, "[]"), ".")
	switch {
	case port == "" && isTLS:
		port = "443"
	case port == "":
		port = "80"
	case strings.Trim(port, "0123456789") == "":
		if port = strings.TrimLeft(port, "0"); port == "" {
			port = "0"
		}
	}
	return net.JoinHostPort(host, port)
}

// URLs returns the public URLs the gateway serves: the authenticate service and each route's
// from, as configured.
func (g *Gateway) URLs() []string {
	out := []string{g.cfg.AuthenticateServiceURL}
	for _, r := range g.cfg.Routes {
		out = append(out, r.From)
	}
	return out
}
