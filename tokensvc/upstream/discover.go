// Discovery of an upstream_discovery route's authorization server, as an MCP client does it
// (MCP authorization 2025-11-25, docs/upstream-discovery.md): an unauthenticated probe of the
// upstream, its 401 challenge's resource_metadata (else the RFC 9728 well-known URLs, path
// first), the protected-resource metadata (its resource must be the upstream's), then the
// authorization server's metadata (RFC 8414 and OpenID discovery URLs in the specification's
// order; its issuer must be the one named). Every URL is fetched only when its host matches
// mcp_allowed_upstream_domains, over https (plain http on loopback only with
// WithInsecureLoopbackDiscovery), through the netguard client (no private addresses, no
// redirects, bounded time and size). Results are cached per route for as long as the
// documents' Cache-Control allows, within [minMetadataTTL, maxMetadataTTL].

package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/shared/domains"
	"github.com/mcpmesh/gateway/shared/wwwauth"
	"github.com/mcpmesh/gateway/tokensvc/internal/netguard"
)

// Cache bounds of discovered metadata.
const (
	minMetadataTTL     = time.Minute
	defaultMetadataTTL = time.Hour
	maxMetadataTTL     = 24 * time.Hour
)

// Kinds of discovery and registration failures: what the connect page names.
const (
	FailMetadataMissing     = "metadata-missing"
	FailMetadataMalformed   = "metadata-malformed"
	FailDomainNotAllowed    = "domain-not-allowed"
	FailForbiddenAddress    = "forbidden-address"
	FailUnreachable         = "unreachable"
	FailRegistrationRefused = "registration-refused"
)

// DiscoveryError is a failed discovery or registration. Its text names the step, the URL
// (without query) and what was wrong in our words: never a response body or a secret.
type DiscoveryError struct {
	Kind   string // one of the Fail* kinds
	What   string // the document or call: "protected-resource metadata", …
	URL    string // label of the URL concerned, when there is one
	Reason string
}

func (e *DiscoveryError) Error() string {
	var b strings.Builder
	b.WriteString("upstream discovery: ")
	b.WriteString(e.What)
	if e.URL != "" {
		b.WriteString(" at ")
		b.WriteString(e.URL)
	}
	b.WriteString(": ")
	b.WriteString(e.Reason)
	return b.String()
}

// Public is the sentence the connect page shows.
func (e *DiscoveryError) Public() string {
	var lead string
	switch e.Kind {
	case FailMetadataMissing:
		lead = "The upstream service does not publish the authorization metadata the gateway needs"
	case FailMetadataMalformed:
		lead = "The upstream service's authorization metadata is not usable"
	case FailDomainNotAllowed:
		lead = "The upstream service points to a domain the administrator has not allowed (mcp_allowed_upstream_domains)"
	case FailForbiddenAddress:
		lead = "The upstream service points to a private network address, which the gateway never contacts"
	case FailUnreachable:
		lead = "The upstream service's authorization metadata could not be fetched"
	case FailRegistrationRefused:
		lead = "The upstream authorization server did not register the gateway as a client"
	default:
		lead = "Discovery of the upstream service's authorization failed"
	}
	return lead + " (" + e.Error() + ")"
}

// discovered is what discovery learnt about one route's upstream.
type discovered struct {
	resource  string   // the protected resource: the RFC 8707 resource of every request
	challenge []string // the scopes of the probe's challenge
	prmScopes []string // the resource's scopes_supported
	as        ServerMetadata
	expires   time.Time
}

// scopes are the scopes the gateway asks for: the operator's, else the challenge's, else the
// resource's scopes_supported; with offline_access when the server offers it (a refresh
// token).
func (d *discovered) scopes(configured []string) []string {
	out := configured
	switch {
	case len(out) > 0:
	case len(d.challenge) > 0:
		out = d.challenge
	default:
		out = d.prmScopes
	}
	out = append([]string(nil), out...)
	for _, s := range d.as.ScopesSupported {
		if s == "offline_access" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// discoverer fetches and caches discovery results per route.
type discoverer struct {
	client       *http.Client
	allow        []string // mcp_allowed_upstream_domains
	loopbackHTTP bool     // plain http to loopback hosts (tests, the local gateway's flag)
	now          func() time.Time
	timeout      time.Duration

	flight singleflight.Group
	mu     sync.Mutex
	cache  map[string]*discovered // by route ID
}

func newDiscoverer(cfg *config.Config) *discoverer {
	return &discoverer{
		client: netguard.NewClient(netguard.ClientOptions{Timeout: CallTimeout}),
		allow:  cfg.MCPAllowedUpstreamDomains, now: time.Now, timeout: CallTimeout,
		cache: map[string]*discovered{},
	}
}

// get returns rt's discovery result, from the cache while it is fresh.
func (d *discoverer) get(ctx context.Context, rt *Route) (*discovered, error) {
	d.mu.Lock()
	c, ok := d.cache[rt.ID]
	d.mu.Unlock()
	if ok && d.now().Before(c.expires) {
		return c, nil
	}
	v, err, _ := d.flight.Do(rt.ID, func() (any, error) {
		var pinned string
		if rt.Discovery != nil {
			pinned = rt.Discovery.Issuer
		}
		r, err := d.run(context.WithoutCancel(ctx), rt.To, pinned)
		if err != nil {
			return nil, err
		}
		d.mu.Lock()
		d.cache[rt.ID] = r
		d.mu.Unlock()
		return r, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*discovered), nil
}

// invalidate drops rt's cached result: the next use discovers again (a call failed in a way
// that says the metadata changed).
func (d *discoverer) invalidate(routeID string) {
	d.mu.Lock()
	delete(d.cache, routeID)
	d.mu.Unlock()
}

// run discovers the authorization of the MCP server at target (a route's to).
func (d *discoverer) run(ctx context.Context, target, pinned string) (*discovered, error) {
	ch, err := d.probe(ctx, target)
	if err != nil {
		return nil, err
	}
	var candidates []string
	if ch.ResourceMetadata != "" {
		candidates = []string{ch.ResourceMetadata}
	} else {
		candidates = resourceMetadataURLs(target)
	}
	var prm ResourceMetadata
	var ttl time.Duration
	body, h, used, err := d.fetchFirst(ctx, "protected-resource metadata", candidates)
	if err != nil {
		return nil, err
	}
	if prm, err = ParseResourceMetadata(body); err != nil {
		return nil, &DiscoveryError{Kind: FailMetadataMalformed, What: "protected-resource metadata", URL: endpointLabel(used), Reason: err.Error()}
	}
	if !resourceCovers(prm.Resource, target) {
		return nil, &DiscoveryError{Kind: FailMetadataMalformed, What: "protected-resource metadata", URL: endpointLabel(used),
			Reason: "its resource " + strconv.Quote(endpointLabel(prm.Resource)) + " is not the upstream " + strconv.Quote(endpointLabel(target))}
	}
	ttl = metadataTTL(h.Get("Cache-Control"))
	issuer := prm.AuthorizationServers[0]
	if pinned != "" && strings.TrimSuffix(issuer, "/") != strings.TrimSuffix(pinned, "/") {
		// The operator pinned the authorization server (upstream_discovery.issuer): another
		// one is never contacted, and a pre-registered client's secret never reaches it.
		return nil, &DiscoveryError{Kind: FailMetadataMalformed, What: "protected-resource metadata", URL: endpointLabel(used),
			Reason: "it names the authorization server " + strconv.Quote(endpointLabel(issuer)) + ", not " + strconv.Quote(endpointLabel(pinned)) + " that upstream_discovery.issuer pins"}
	}
	if err := d.allowed("authorization server", issuer); err != nil {
		return nil, err
	}
	body, h, used, err = d.fetchFirst(ctx, "authorization server metadata", serverMetadataURLs(issuer))
	if err != nil {
		return nil, err
	}
	as, err := ParseServerMetadata(body)
	if err != nil {
		return nil, &DiscoveryError{Kind: FailMetadataMalformed, What: "authorization server metadata", URL: endpointLabel(used), Reason: err.Error()}
	}
	if strings.TrimSuffix(as.Issuer, "/") != strings.TrimSuffix(issuer, "/") {
		return nil, &DiscoveryError{Kind: FailMetadataMalformed, What: "authorization server metadata", URL: endpointLabel(used),
			Reason: "its issuer " + strconv.Quote(endpointLabel(as.Issuer)) + " is not the authorization server the resource names"}
	}
	for _, e := range []struct{ what, u string }{
		{"authorization endpoint", as.AuthorizationEndpoint},
		{"token endpoint", as.TokenEndpoint},
		{"registration endpoint", as.RegistrationEndpoint},
	} {
		if e.u == "" {
			continue
		}
		if err := d.allowed(e.what, e.u); err != nil {
			return nil, err
		}
	}
	ttl = min(ttl, metadataTTL(h.Get("Cache-Control")))
	return &discovered{
		resource: prm.Resource, challenge: strings.Fields(ch.Scope), prmScopes: prm.ScopesSupported,
		as: as, expires: d.now().Add(ttl),
	}, nil
}

// probe sends the upstream an unauthenticated MCP initialize request and reads the Bearer
// challenge of its answer (empty when it sends none).
func (d *discoverer) probe(ctx context.Context, target string) (wwwauth.Challenge, error) {
	const what = "unauthenticated probe of the upstream"
	if err := d.allowed("upstream", target); err != nil {
		return wwwauth.Challenge{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"mcp-gateway-discovery","version":"1"}}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, strings.NewReader(body))
	if err != nil {
		return wwwauth.Challenge{}, &DiscoveryError{Kind: FailMetadataMalformed, What: what, URL: endpointLabel(target), Reason: "cannot build the request"}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := d.client.Do(req)
	if err != nil {
		return wwwauth.Challenge{}, d.fetchError(what, target, err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, MaxResponseBytes))
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		return wwwauth.Challenge{}, nil // no challenge: the well-known URLs are tried
	}
	var ch wwwauth.Challenge
	for _, v := range resp.Header.Values("WWW-Authenticate") {
		if c, ok := wwwauth.Parse(v); ok {
			ch = c
			break
		}
	}
	if ch.ResourceMetadata != "" && !absoluteURL(ch.ResourceMetadata) {
		return wwwauth.Challenge{}, &DiscoveryError{Kind: FailMetadataMalformed, What: what, URL: endpointLabel(target), Reason: "its challenge's resource_metadata is not an absolute URL"}
	}
	if ch.Scope != "" && !scopeTokens(strings.Fields(ch.Scope)) {
		ch.Scope = ""
	}
	return ch, nil
}

// fetchFirst GETs the candidates in order and returns the first 200 answer (body bounded by
// MaxResponseBytes, served as JSON). A candidate answered otherwise is skipped; a refused
// domain or address, or an unreachable host, ends the search.
func (d *discoverer) fetchFirst(ctx context.Context, what string, candidates []string) ([]byte, http.Header, string, error) {
	var last string
	for _, u := range candidates {
		if err := d.allowed(what, u); err != nil {
			return nil, nil, "", err
		}
		body, h, status, err := d.get1(ctx, what, u)
		if err != nil {
			return nil, nil, "", err
		}
		if status == http.StatusOK {
			return body, h, u, nil
		}
		last = fmt.Sprintf("%s answered HTTP %d", endpointLabel(u), status)
		if status >= 300 && status < 400 {
			last += " (redirects are not followed)"
		}
	}
	return nil, nil, "", &DiscoveryError{Kind: FailMetadataMissing, What: what, Reason: "not found at any of its URLs; last: " + last}
}

// get1 makes one bounded GET.
func (d *discoverer) get1(ctx context.Context, what, u string) ([]byte, http.Header, int, error) {
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, nil, 0, &DiscoveryError{Kind: FailMetadataMalformed, What: what, URL: endpointLabel(u), Reason: "cannot build the request"}
	}
	req.Header.Set("Accept", "application/json")
	resp, err := d.client.Do(req)
	if err != nil {
		return nil, nil, 0, d.fetchError(what, u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, nil, resp.StatusCode, nil
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes+1))
	if err != nil {
		return nil, nil, 0, d.fetchError(what, u, err)
	}
	if len(raw) > MaxResponseBytes {
		return nil, nil, 0, &DiscoveryError{Kind: FailMetadataMalformed, What: what, URL: endpointLabel(u), Reason: fmt.Sprintf("the document is larger than %d KiB", MaxResponseBytes>>10)}
	}
	return raw, resp.Header, resp.StatusCode, nil
}

// fetchError classifies a failed request.
func (d *discoverer) fetchError(what, u string, err error) error {
	switch {
	case errors.Is(err, netguard.ErrForbiddenAddress):
		return &DiscoveryError{Kind: FailForbiddenAddress, What: what, URL: endpointLabel(u), Reason: "its host resolves to a non-public address"}
	case errors.Is(err, netguard.ErrRedirect):
		return &DiscoveryError{Kind: FailMetadataMissing, What: what, URL: endpointLabel(u), Reason: "it answered with a redirect, which is not followed"}
	case errors.Is(err, context.DeadlineExceeded), isTimeout(err):
		return &DiscoveryError{Kind: FailUnreachable, What: what, URL: endpointLabel(u), Reason: fmt.Sprintf("no complete answer within %s", d.timeout)}
	}
	return &DiscoveryError{Kind: FailUnreachable, What: what, URL: endpointLabel(u), Reason: "no answer"}
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// allowed checks a URL the gateway is about to contact (or send a browser to): https, or
// plain http to a loopback host when loopbackHTTP is set, and a host on the allowlist.
func (d *discoverer) allowed(what, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil {
		return &DiscoveryError{Kind: FailMetadataMalformed, What: what, Reason: "not an absolute URL"}
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && d.loopbackHTTP && config.IsLoopbackHost(u.Hostname()):
	default:
		return &DiscoveryError{Kind: FailMetadataMalformed, What: what, URL: endpointLabel(raw), Reason: "not an https URL"}
	}
	if !domains.DomainAllowed(d.allow, u.Hostname()) && !(d.loopbackHTTP && domains.LoopbackLiteralListed(d.allow, u.Hostname())) {
		return &DiscoveryError{Kind: FailDomainNotAllowed, What: what, URL: endpointLabel(raw), Reason: "its host " + strconv.Quote(u.Hostname()) + " matches no pattern of mcp_allowed_upstream_domains"}
	}
	return nil
}

// resourceMetadataURLs are the RFC 9728 well-known URLs of target: path-aware, then root.
func resourceMetadataURLs(target string) []string {
	u, err := url.Parse(target)
	if err != nil {
		return nil
	}
	origin := u.Scheme + "://" + u.Host
	const wk = "/.well-known/oauth-protected-resource"
	p := strings.TrimSuffix(u.EscapedPath(), "/")
	if p == "" {
		return []string{origin + wk}
	}
	return []string{origin + wk + p, origin + wk}
}

// serverMetadataURLs are the metadata URLs of an issuer in the order of the MCP
// specification: for an issuer with a path, RFC 8414 path insertion, OpenID Connect path
// insertion, then OpenID Connect path appending; without a path, RFC 8414 then OpenID.
func serverMetadataURLs(issuer string) []string {
	u, err := url.Parse(issuer)
	if err != nil {
		return nil
	}
	origin := u.Scheme + "://" + u.Host
	p := strings.TrimSuffix(u.EscapedPath(), "/")
	if p == "" {
		return []string{origin + "/.well-known/oauth-authorization-server", origin + "/.well-known/openid-configuration"}
	}
	return []string{
		origin + "/.well-known/oauth-authorization-server" + p,
		origin + "/.well-known/openid-configuration" + p,
		origin + p + "/.well-known/openid-configuration",
	}
}

// resourceCovers reports whether the protected resource named by metadata covers target:
// the same origin (scheme and host compared case-insensitively, default ports dropped) and
// the same path or a parent of it on a segment boundary.
func resourceCovers(resource, target string) bool {
	r, err1 := url.Parse(resource)
	t, err2 := url.Parse(target)
	if err1 != nil || err2 != nil || r.RawQuery != "" {
		return false
	}
	if !strings.EqualFold(r.Scheme, t.Scheme) || canonicalHost(r) != canonicalHost(t) {
		return false
	}
	rp, tp := strings.TrimSuffix(r.EscapedPath(), "/"), strings.TrimSuffix(t.EscapedPath(), "/")
	return rp == tp || strings.HasPrefix(tp, rp+"/")
}

func canonicalHost(u *url.URL) string {
	h, p := strings.ToLower(strings.TrimSuffix(u.Hostname(), ".")), u.Port()
	if (p == "443" && strings.EqualFold(u.Scheme, "https")) || (p == "80" && strings.EqualFold(u.Scheme, "http")) {
		p = ""
	}
	if p == "" {
		return h
	}
	return h + ":" + p
}

// metadataTTL reads how long a metadata document may be cached from Cache-Control: max-age
// within [minMetadataTTL, maxMetadataTTL], defaultMetadataTTL without one; no-store and
// no-cache get the minimum (the gateway cannot discover on every request).
func metadataTTL(cc string) time.Duration {
	ttl := defaultMetadataTTL
	for _, d := range strings.Split(cc, ",") {
		name, val, _ := strings.Cut(strings.TrimSpace(d), "=")
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "no-store", "no-cache":
			return minMetadataTTL
		case "max-age":
			n, err := strconv.ParseInt(strings.Trim(strings.TrimSpace(val), `"`), 10, 64)
			if err != nil || n < 0 {
				return minMetadataTTL
			}
			ttl = time.Duration(min(n, int64(maxMetadataTTL/time.Second))) * time.Second
		}
	}
	return max(ttl, minMetadataTTL)
}
