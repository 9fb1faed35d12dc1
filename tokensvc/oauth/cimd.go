package oauth

import (
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/mcpmesh/gateway/shared/domains"
	"github.com/mcpmesh/gateway/tokensvc/store"
)

// Client ID metadata document cache policy.
const (
	defaultDocumentCacheSize = 1024
	defaultDocumentTTL       = 5 * time.Minute
	maxDocumentTTL           = 24 * time.Hour
	maxClientIDURLLen        = 2000
)

// Errors of URL client IDs; the authorize endpoint branches on them.
var (
	// errClientIDDomain: the client ID URL's host matches no pattern of
	// mcp_allowed_client_id_domains.
	errClientIDDomain = errors.New("client ID document domain is not allowed")
	// errClientDocument wraps every failure to obtain a valid document.
	errClientDocument = errors.New("client ID metadata document unusable")
)

// isURLClientID reports whether a client_id is meant as a URL (a client ID
// metadata document) rather than a registered client's opaque ID.
func isURLClientID(id string) bool {
	return strings.Contains(id, "://")
}

// parseClientIDURL validates a URL client ID: https, a host that is a DNS
// name, a path, no fragment, no userinfo, no dot segments.
func parseClientIDURL(id string) (*url.URL, error) {
	if len(id) > maxClientIDURLLen {
		return nil, errors.New("client ID URL is too long")
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c <= 0x20 || c >= 0x7f || c == '\\' {
			return nil, errors.New("client ID URL contains whitespace, control or non-ASCII characters")
		}
	}
	if strings.Contains(id, "#") {
		return nil, errors.New("client ID URL must not contain a fragment")
	}
	u, err := url.Parse(id)
	if err != nil {
		return nil, errors.New("client ID is not a valid URL")
	}
	if u.Scheme != "https" || !strings.HasPrefix(id, "https://") {
		return nil, errors.New("client ID URL must use https")
	}
	if u.User != nil {
		return nil, errors.New("client ID URL must not contain user information")
	}
	if u.Host == "" || u.Opaque != "" {
		return nil, errors.New("client ID URL has no host")
	}
	if !domains.ValidDNSName(strings.TrimSuffix(u.Hostname(), ".")) {
		return nil, errors.New("client ID URL host must be a DNS name, not an IP address")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, errors.New("client ID URL has an invalid port")
		}
	}
	if u.Path == "" || u.Path == "/" {
		return nil, errors.New("client ID URL must have a path")
	}
	for _, seg := range strings.Split(u.EscapedPath(), "/") {
		dec, err := url.PathUnescape(seg)
		if err != nil || dec == "." || dec == ".." {
			return nil, errors.New("client ID URL must not contain dot segments")
		}
	}
	return u, nil
}

// documentResolver fetches, validates and caches client ID metadata
// documents.
type documentResolver struct {
	client *http.Client
	now    func() time.Time
	log    *slog.Logger
	max    int
	flight singleflight.Group
	events Events

	mu    sync.Mutex
	lru   *list.List // of *cachedDocument, most recently used first
	index map[string]*list.Element
}

type cachedDocument struct {
	id      string
	doc     metadataDocument
	expires time.Time
}

// metadataDocument is the client a client ID metadata document describes, with what the
// store.Client does not hold: the jwks_uri of a private_key_jwt client.
type metadataDocument struct {
	client  store.Client
	jwksURI string
}

func newDocumentResolver(c *http.Client, now func() time.Time, log *slog.Logger, max int) *documentResolver {
	return &documentResolver{client: c, now: now, log: log, max: max, events: noEvents{}, lru: list.New(), index: map[string]*list.Element{}}
}

// resolve returns the client described by the document at clientID, from
// the cache or by fetching it. The caller has checked the URL and domain.
func (d *documentResolver) resolve(ctx context.Context, clientID string) (store.Client, error) {
	doc, err := d.resolveDocument(ctx, clientID)
	return doc.client, err
}

// resolveDocument is resolve with the document's jwks_uri.
func (d *documentResolver) resolveDocument(ctx context.Context, clientID string) (metadataDocument, error) {
	if c, ok := d.cached(clientID); ok {
		return c, nil
	}
	v, err, _ := d.flight.Do(clientID, func() (any, error) {
		if c, ok := d.cached(clientID); ok {
			return c, nil
		}
		c, ttl, outcome, err := d.fetch(context.WithoutCancel(ctx), clientID)
		d.events.MetadataDocumentFetch(outcome)
		if err != nil {
			return metadataDocument{}, err
		}
		if ttl > 0 {
			d.put(clientID, c, d.now().Add(ttl))
		}
		return c, nil
	})
	if err != nil {
		return metadataDocument{}, err
	}
	return v.(metadataDocument), nil
}

func (d *documentResolver) cached(id string) (metadataDocument, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, ok := d.index[id]
	if !ok {
		return metadataDocument{}, false
	}
	cd := e.Value.(*cachedDocument)
	if !d.now().Before(cd.expires) {
		d.lru.Remove(e)
		delete(d.index, id)
		return metadataDocument{}, false
	}
	d.lru.MoveToFront(e)
	return cd.doc, true
}

func (d *documentResolver) put(id string, c metadataDocument, expires time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if e, ok := d.index[id]; ok {
		d.lru.Remove(e)
	}
	d.index[id] = d.lru.PushFront(&cachedDocument{id: id, doc: c, expires: expires})
	for d.lru.Len() > d.max {
		last := d.lru.Back()
		d.lru.Remove(last)
		delete(d.index, last.Value.(*cachedDocument).id)
	}
}

// fetch downloads and validates the document; the duration is how long it
// may be cached (zero: not at all), outcome one of the Document* constants.
func (d *documentResolver) fetch(ctx context.Context, clientID string) (c metadataDocument, ttl time.Duration, outcome string, err error) {
	c, ttl, err = d.download(ctx, clientID)
	switch {
	case err == nil:
		outcome = DocumentFetched
	case errors.Is(err, ErrForbiddenAddress):
		outcome = DocumentForbidden
	case errors.As(err, new(unreachableError)):
		outcome = DocumentUnreachable
	default:
		outcome = DocumentInvalid
	}
	return c, ttl, outcome, err
}

// unreachableError marks a document request that failed before any answer; its message is
// the wrapped error's.
type unreachableError struct{ error }

func (e unreachableError) Unwrap() error { return e.error }

func (d *documentResolver) download(ctx context.Context, clientID string) (metadataDocument, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, clientID, nil)
	if err != nil {
		return metadataDocument{}, 0, fmt.Errorf("%w: %v", errClientDocument, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := d.client.Do(req)
	if err != nil {
		if errors.Is(err, ErrForbiddenAddress) {
			return metadataDocument{}, 0, fmt.Errorf("%w: its host resolves to a non-public address: %w", errClientDocument, ErrForbiddenAddress)
		}
		d.log.InfoContext(ctx, "oauth: fetch client ID metadata document", "client_id", clientID, "error", err)
		return metadataDocument{}, 0, unreachableError{fmt.Errorf("%w: it could not be fetched", errClientDocument)}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return metadataDocument{}, 0, fmt.Errorf("%w: the document server answered HTTP %d", errClientDocument, resp.StatusCode)
	}
	if mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
		return metadataDocument{}, 0, fmt.Errorf("%w: the document is not served as application/json", errClientDocument)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBodyBytes+1))
	if err != nil {
		return metadataDocument{}, 0, fmt.Errorf("%w: it could not be read", errClientDocument)
	}
	if len(body) > maxBodyBytes {
		return metadataDocument{}, 0, fmt.Errorf("%w: the document is larger than %d bytes", errClientDocument, maxBodyBytes)
	}
	c, err := parseDocument(body, clientID)
	if err != nil {
		return metadataDocument{}, 0, err
	}
	return c, cacheTTL(resp.Header.Get("Cache-Control")), nil
}

// parseDocument validates a client ID metadata document fetched from
// clientID. Its client_id must equal the URL exactly; the client is public
// (token_endpoint_auth_method none) or authenticates with private_key_jwt and
// the keys at its jwks_uri: a document cannot hold a shared secret.
func parseDocument(body []byte, clientID string) (metadataDocument, error) {
	var doc struct {
		ClientID *string `json:"client_id"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return metadataDocument{}, fmt.Errorf("%w: the document is not a JSON object", errClientDocument)
	}
	if doc.ClientID == nil || *doc.ClientID != clientID {
		return metadataDocument{}, fmt.Errorf("%w: its client_id does not equal the URL it was fetched from", errClientDocument)
	}
	m, oerr := parseClientMetadata(body, authNone)
	if oerr != nil {
		return metadataDocument{}, fmt.Errorf("%w: %s", errClientDocument, oerr.description)
	}
	if m.TokenEndpointAuthMethod != authNone && m.TokenEndpointAuthMethod != authPrivateKeyJWT {
		return metadataDocument{}, fmt.Errorf("%w: token_endpoint_auth_method must be none or private_key_jwt for a metadata document client (a document cannot hold a secret)", errClientDocument)
	}
	return metadataDocument{jwksURI: m.JWKSURI, client: store.Client{
		ID:                      clientID,
		Kind:                    store.ClientMetadataDocument,
		Name:                    m.ClientName,
		RedirectURIs:            m.RedirectURIs,
		GrantTypes:              m.GrantTypes,
		ResponseTypes:           m.ResponseTypes,
		TokenEndpointAuthMethod: m.TokenEndpointAuthMethod,
		Scope:                   m.Scope,
	}}, nil
}

// cacheTTL reads how long a document may be cached from Cache-Control:
// max-age capped at 24 hours, 5 minutes by default, never with no-store or
// no-cache.
func cacheTTL(cc string) time.Duration {
	ttl := defaultDocumentTTL
	for _, d := range strings.Split(cc, ",") {
		name, val, _ := strings.Cut(strings.TrimSpace(d), "=")
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "no-store", "no-cache":
			return 0
		case "max-age":
			n, err := strconv.ParseInt(strings.Trim(strings.TrimSpace(val), `"`), 10, 64)
			if err != nil || n < 0 {
				return 0
			}
			if n > int64(maxDocumentTTL/time.Second) {
				n = int64(maxDocumentTTL / time.Second)
			}
			ttl = time.Duration(n) * time.Second
		}
	}
	return ttl
}
