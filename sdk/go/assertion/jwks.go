package assertion

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The JWKS cache's timing.
const (
	// DefaultCacheTTL is how long a key set is kept when its response has no max-age.
	DefaultCacheTTL = 5 * time.Minute
	// MaxCacheTTL bounds the max-age honoured.
	MaxCacheTTL = 24 * time.Hour
	// MinRefreshInterval is the least time between two fetches caused by an unknown kid.
	MinRefreshInterval = 30 * time.Second
	// maxJWKSSize bounds the key set document.
	maxJWKSSize = 1 << 20
)

// keyCache holds the JWKS. One fetch runs at a time; the others wait for it.
type keyCache struct {
	url    string
	client *http.Client
	now    func() time.Time

	mu        sync.Mutex
	keys      map[string]*ecdsa.PublicKey
	fetchedAt time.Time // zero: never fetched successfully
	expires   time.Time
}

func newKeyCache(url string, client *http.Client, now func() time.Time) *keyCache {
	return &keyCache{url: url, client: client, now: now}
}

// key returns the key named kid: from the cache while it is fresh, else from a fetch; an
// unknown kid refetches once unless the last fetch is younger than MinRefreshInterval.
func (c *keyCache) key(ctx context.Context, kid string) (*ecdsa.PublicKey, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if c.fetchedAt.IsZero() || !now.Before(c.expires) {
		if err := c.fetch(ctx); err != nil {
			return nil, err
		}
	} else if _, ok := c.keys[kid]; !ok && now.Sub(c.fetchedAt) >= MinRefreshInterval {
		if err := c.fetch(ctx); err != nil {
			return nil, err
		}
	}
	if k, ok := c.keys[kid]; ok {
		return k, nil
	}
	return nil, refuse(ReasonUnknownKey, "kid %q is not in the JWKS at %s", kid, c.url)
}

// fetch replaces the cached set. A failure empties it (fail closed) and is not cached, so
// the next verification tries again.
func (c *keyCache) fetch(ctx context.Context) error {
	keys, ttl, err := c.get(ctx)
	if err != nil {
		c.keys, c.fetchedAt, c.expires = nil, time.Time{}, time.Time{}
		return &Error{Reason: ReasonJWKSUnavailable, Detail: "cannot fetch the JWKS at " + c.url, Err: err}
	}
	now := c.now()
	c.keys, c.fetchedAt, c.expires = keys, now, now.Add(ttl)
	return nil
}

func (c *keyCache) get(ctx context.Context) (map[string]*ecdsa.PublicKey, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, 0, fmt.Errorf("HTTP status %d", resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSSize+1))
	if err != nil {
		return nil, 0, err
	}
	if len(body) > maxJWKSSize {
		return nil, 0, fmt.Errorf("more than %d bytes", maxJWKSSize)
	}
	keys, err := ParseJWKS(body)
	if err != nil {
		return nil, 0, err
	}
	return keys, cacheTTL(resp.Header), nil
}

// cacheTTL reads max-age from Cache-Control: no-store, no-cache or max-age=0 keep the set for
// no time (the next verification refetches), no max-age gives DefaultCacheTTL.
func cacheTTL(h http.Header) time.Duration {
	ttl := DefaultCacheTTL
	for _, v := range h.Values("Cache-Control") {
		for _, d := range strings.Split(v, ",") {
			name, val, _ := strings.Cut(strings.TrimSpace(d), "=")
			switch strings.ToLower(name) {
			case "no-store", "no-cache":
				return 0
			case "max-age":
				n, err := strconv.ParseInt(strings.Trim(val, `"`), 10, 64)
				if err != nil || n < 0 {
					return 0
				}
				ttl = min(time.Duration(min(n, int64(MaxCacheTTL/time.Second)))*time.Second, MaxCacheTTL)
			}
		}
	}
	return ttl
}

// ParseJWKS returns the P-256 signature keys of a JWKS document by kid. Keys of other types,
// curves or uses are skipped; a document with no usable key is an error.
func ParseJWKS(doc []byte) (map[string]*ecdsa.PublicKey, error) {
	var set struct {
		Keys []struct {
			Kty string `json:"kty"`
			Crv string `json:"crv"`
			Kid string `json:"kid"`
			Use string `json:"use"`
			Alg string `json:"alg"`
			X   string `json:"x"`
			Y   string `json:"y"`
		} `json:"keys"`
	}
	if err := json.Unmarshal(doc, &set); err != nil {
		return nil, fmt.Errorf("not a JWKS: %w", err)
	}
	keys := map[string]*ecdsa.PublicKey{}
	for _, k := range set.Keys {
		if k.Kty != "EC" || k.Crv != "P-256" || k.Kid == "" || (k.Use != "" && k.Use != "sig") || (k.Alg != "" && k.Alg != "ES256") {
			continue
		}
		x, errX := base64.RawURLEncoding.DecodeString(k.X)
		y, errY := base64.RawURLEncoding.DecodeString(k.Y)
		if errX != nil || errY != nil || len(x) != 32 || len(y) != 32 {
			return nil, fmt.Errorf("key %q: bad coordinates", k.Kid)
		}
		pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x...), y...))
		if err != nil {
			return nil, fmt.Errorf("key %q: %w", k.Kid, err)
		}
		keys[k.Kid] = pub
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("no ES256 P-256 key")
	}
	return keys, nil
}
