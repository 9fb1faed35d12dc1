package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"golang.org/x/sync/singleflight"
)

// The keys of private_key_jwt clients (assertion.go), fetched from their documents'
// jwks_uri with the documents' SSRF-guarded client and cached like the documents
// (Cache-Control, 5 minutes by default, at most 24 hours). An assertion whose key is not in
// the cached set refetches the set once — at most once per jwksRefetchInterval per URI, so
// that made-up key IDs cannot make the server hammer a client's host.
const (
	maxJWKSBytes         = 64 << 10
	maxJWKSKeys          = 20
	maxJWKSCacheEntries  = 1024
	jwksRefetchInterval  = 10 * time.Second
	defaultJWKSCacheSize = maxJWKSCacheEntries
)

type jwksCache struct {
	client *http.Client
	now    func() time.Time
	log    *slog.Logger
	max    int
	flight singleflight.Group

	mu      sync.Mutex
	entries map[string]*jwksEntry
}

type jwksEntry struct {
	set     *jose.JSONWebKeySet
	fetched time.Time
	expires time.Time
}

func newJWKSCache(c *http.Client, now func() time.Time, log *slog.Logger, max int) *jwksCache {
	return &jwksCache{client: c, now: now, log: log, max: max, entries: map[string]*jwksEntry{}}
}

// keys returns the key set at uri: the cached one unless refresh is set or it has expired.
func (c *jwksCache) keys(ctx context.Context, uri string, refresh bool) (*jose.JSONWebKeySet, error) {
	if !refresh {
		c.mu.Lock()
		e, ok := c.entries[uri]
		c.mu.Unlock()
		if ok && c.now().Before(e.expires) {
			return e.set, nil
		}
	}
	v, err, _ := c.flight.Do(uri, func() (any, error) {
		set, ttl, err := c.fetch(context.WithoutCancel(ctx), uri)
		if err != nil {
			return nil, err
		}
		now := c.now()
		c.mu.Lock()
		defer c.mu.Unlock()
		if _, ok := c.entries[uri]; !ok && len(c.entries) >= c.max {
			for k, e := range c.entries { // evict an expired entry, else any
				if !now.Before(e.expires) {
					delete(c.entries, k)
					break
				}
			}
			for k := range c.entries {
				if len(c.entries) < c.max {
					break
				}
				delete(c.entries, k)
			}
		}
		c.entries[uri] = &jwksEntry{set: set, fetched: now, expires: now.Add(ttl)}
		return set, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*jose.JSONWebKeySet), nil
}

// mayRefetch reports whether the set at uri was fetched long enough ago to fetch it again
// for a key it lacks.
func (c *jwksCache) mayRefetch(uri string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[uri]
	return !ok || c.now().Sub(e.fetched) >= jwksRefetchInterval
}

func (c *jwksCache) fetch(ctx context.Context, uri string) (*jose.JSONWebKeySet, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, uri, nil)
	if err != nil {
		return nil, 0, errors.New("jwks_uri is not a valid URL")
	}
	req.Header.Set("Accept", "application/jwk-set+json, application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		if errors.Is(err, ErrForbiddenAddress) {
			return nil, 0, fmt.Errorf("jwks_uri resolves to a non-public address: %w", ErrForbiddenAddress)
		}
		c.log.InfoContext(ctx, "oauth: fetch jwks_uri", "jwks_uri", uri, "error", err)
		return nil, 0, errors.New("jwks_uri could not be fetched")
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, 0, fmt.Errorf("jwks_uri answered HTTP %d", resp.StatusCode)
	}
	if mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err != nil || (mt != "application/json" && mt != "application/jwk-set+json") {
		return nil, 0, errors.New("jwks_uri is not served as application/json")
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes+1))
	if err != nil || len(body) > maxJWKSBytes {
		return nil, 0, fmt.Errorf("jwks_uri could not be read or is larger than %d bytes", maxJWKSBytes)
	}
	set, err := parseJWKS(body)
	if err != nil {
		return nil, 0, err
	}
	return set, cacheTTL(resp.Header.Get("Cache-Control")), nil
}

// parseJWKS decodes a JWK Set of at most maxJWKSKeys public keys. A set holding a private or
// symmetric key is refused whole: it was published by mistake, and its keys are not secret.
func parseJWKS(body []byte) (*jose.JSONWebKeySet, error) {
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, errors.New("jwks_uri does not hold a JWK Set")
	}
	if len(set.Keys) == 0 || len(set.Keys) > maxJWKSKeys {
		return nil, fmt.Errorf("the JWK Set must hold 1 to %d keys", maxJWKSKeys)
	}
	for _, k := range set.Keys {
		if _, symmetric := k.Key.([]byte); symmetric || !k.IsPublic() {
			return nil, errors.New("the JWK Set holds a private or symmetric key")
		}
	}
	return &set, nil
}
