package plugin

import (
	"crypto/sha256"
	"time"

	"github.com/mcpmesh/gateway/shared/policy"
)

// bundle is a decision bundle from the token service, ready for use on requests.
type bundle struct {
	input         policy.Input // identity part; MCP fields are filled per request
	assertion     string
	upstreamToken string
	clientToken   string
	expires       time.Time
	session       sessionBinding // MCP session IDs of this user on this route (session.go)
}

// cacheKey is SHA-256(credential kind, credential) with the route ID: the credential itself
// is never kept in memory longer than the request.
type cacheKey struct {
	credential [sha256.Size]byte
	routeID    string
}

func makeCacheKey(kind byte, credential, routeID string) cacheKey {
	// The route ID stays out of the hash so that the input fits one SHA-256 block (55 bytes)
	// for the gateway's own tokens (43 characters): a block costs about 25,000 instructions
	// in the wasm filter. One Sum256 over a stack buffer: the streaming hash.Hash (an
	// allocation, four interface calls) would cost more than the hashing itself.
	var buf [128]byte
	b := append(buf[:0], kind)
	b = append(b, credential...)
	return cacheKey{credential: sha256.Sum256(b), routeID: routeID}
}

// bundleCache is the per-VM cache of decision bundles. It is bounded: when full, expired
// entries are swept, and if none were, an arbitrary entry is evicted.
type bundleCache struct {
	max     int
	entries map[cacheKey]*bundle
}

func newBundleCache(max int) *bundleCache {
	return &bundleCache{max: max, entries: make(map[cacheKey]*bundle, 64)}
}

func (c *bundleCache) get(k cacheKey, now time.Time) *bundle {
	b := c.entries[k]
	if b == nil {
		return nil
	}
	if !now.Before(b.expires) {
		delete(c.entries, k)
		return nil
	}
	return b
}

func (c *bundleCache) put(k cacheKey, b *bundle, now time.Time) {
	if c.max <= 0 {
		return
	}
	if len(c.entries) >= c.max {
		for key, e := range c.entries {
			if !now.Before(e.expires) {
				delete(c.entries, key)
			}
		}
		for key := range c.entries {
			if len(c.entries) < c.max {
				break
			}
			delete(c.entries, key)
		}
	}
	c.entries[k] = b
}
