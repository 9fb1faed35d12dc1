package netguard

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// ErrForbiddenAddress is wrapped by the error of a fetch that would have
// connected to a non-public address.
var ErrForbiddenAddress = errors.New("refusing to connect to a non-public address")

// Address ranges a guarded fetch must never reach.
var (
	blockedV4 = mustPrefixes(
		"0.0.0.0/8",       // "this network", unspecified
		"10.0.0.0/8",      // RFC 1918
		"100.64.0.0/10",   // CGNAT (RFC 6598)
		"127.0.0.0/8",     // loopback
		"169.254.0.0/16",  // link-local, cloud metadata services
		"172.16.0.0/12",   // RFC 1918
		"192.0.0.0/24",    // IETF protocol assignments
		"192.0.2.0/24",    // documentation (TEST-NET-1)
		"192.88.99.0/24",  // 6to4 relay anycast (deprecated)
		"192.168.0.0/16",  // RFC 1918
		"198.18.0.0/15",   // benchmarking
		"198.51.100.0/24", // documentation (TEST-NET-2)
		"203.0.113.0/24",  // documentation (TEST-NET-3)
		"224.0.0.0/4",     // multicast
		"240.0.0.0/4",     // reserved, broadcast
	)
	globalV6  = netip.MustParsePrefix("2000::/3")
	blockedV6 = mustPrefixes(
		"2001::/23",     // IETF protocol assignments (Teredo, ORCHID, …)
		"2001:db8::/32", // documentation
		"2002::/16",     // 6to4 (embeds IPv4)
		"3fff::/20",     // documentation
	)
	nat64 = netip.MustParsePrefix("64:ff9b::/96")
)

// ErrRedirect is wrapped by the error of a guarded fetch that was answered
// with a redirect: redirects are never followed.
var ErrRedirect = errors.New("redirects are not followed")

func mustPrefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

// PublicAddr reports whether a is a public unicast address that a guarded
// fetch may connect to. It refuses loopback, RFC 1918, link-local,
// CGNAT, unique-local, unspecified, multicast, broadcast, documentation and
// other special-purpose ranges, IPv4-mapped IPv6 forms of those, and NAT64
// (64:ff9b::/96) addresses embedding them. Only 2000::/3 is public in IPv6.
func PublicAddr(a netip.Addr) bool {
	if !a.IsValid() || a.Zone() != "" {
		return false
	}
	a = a.Unmap()
	if a.Is4() {
		for _, p := range blockedV4 {
			if p.Contains(a) {
				return false
			}
		}
		return true
	}
	if nat64.Contains(a) {
		b := a.As16()
		return PublicAddr(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}))
	}
	if !globalV6.Contains(a) {
		return false
	}
	for _, p := range blockedV6 {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// ClientOptions configures NewClient.
type ClientOptions struct {
	// AllowAddr reports whether the client may connect to an address. It is
	// checked at connect time, after name resolution, for every address
	// dialled, so DNS rebinding between a check and the connection cannot
	// bypass it. nil means PublicAddr. Tests may allow loopback explicitly.
	AllowAddr func(netip.Addr) bool
	// TLSConfig replaces the TLS configuration (tests trust a test CA). nil
	// means system roots, TLS 1.2 or later.
	TLSConfig *tls.Config
	// Timeout bounds a whole fetch; zero means 5 seconds.
	Timeout time.Duration
	// DialAddress, if set, maps the host:port about to be dialled to another (tests point
	// public names at a test server). AllowAddr still checks the address dialled.
	DialAddress func(hostport string) string
}

// NewClient returns an HTTP client for fetching documents at URLs that
// someone else chose (client ID metadata documents, their jwks_uri, an
// upstream MCP server's authorization metadata): it connects only to
// addresses AllowAddr accepts, ignores proxy settings from the environment,
// follows no redirects, and gives up after the timeout.
func NewClient(o ClientOptions) *http.Client {
	allow := o.AllowAddr
	if allow == nil {
		allow = PublicAddr
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	tlsConfig := o.TLSConfig.Clone() // the transport sets its NextProtos: one copy per client
	if tlsConfig == nil {
		tlsConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	dialer := &net.Dialer{
		Timeout: timeout,
		Control: func(network, address string, _ syscall.RawConn) error {
			if network != "tcp4" && network != "tcp6" {
				return fmt.Errorf("dial %s %s: %w", network, address, ErrForbiddenAddress)
			}
			ap, err := netip.ParseAddrPort(address)
			if err != nil || !allow(ap.Addr()) {
				return fmt.Errorf("dial %s: %w", address, ErrForbiddenAddress)
			}
			return nil
		},
	}
	dial := dialer.DialContext
	if m := o.DialAddress; m != nil {
		dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			return dialer.DialContext(ctx, network, m(addr))
		}
	}
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			Proxy:                  nil, // never from the environment
			DialContext:            dial,
			TLSClientConfig:        tlsConfig,
			TLSHandshakeTimeout:    timeout,
			ResponseHeaderTimeout:  timeout,
			MaxResponseHeaderBytes: 16 << 10,
			MaxIdleConns:           16,
			IdleConnTimeout:        30 * time.Second,
			ForceAttemptHTTP2:      true,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return ErrRedirect
		},
	}
}
