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
	// refused marks a negative entry: the token service refused this bearer token (limits.go).
	refused bool
	// size approximates the memory the entry holds (bundleSize), set by put.
	size int
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

// bundleCache is the per-VM cache of decision bundles and refusals. It is bounded by entries
// (max) and by approximate bytes (maxBytes). To make room it first sweeps every expired entry,
// then evicts arbitrary live entries (Go's map order: no access pattern can pin an entry or
// force a particular one out) until the new entry fits. An evicted bundle costs one more
// check call, never a wrong decision.
type bundleCache struct {
	max, maxBytes int
	bytes         int
	entries       map[cacheKey]*bundle
	// lastSweep is when put last dropped every expired entry: it does so at least every
	// sweepInterval, so that memory follows the live entries rather than filling up to the
	// bounds with expired ones (refreshed tokens leave their old bundles behind).
	lastSweep time.Time
}

// sweepInterval is how often put drops every expired entry even when the cache is not full.
const sweepInterval = 10 * time.Second

func newBundleCache(max int) *bundleCache {
	return &bundleCache{max: max, maxBytes: maxCacheBytes, entries: make(map[cacheKey]*bundle, 64)}
}

func (c *bundleCache) remove(k cacheKey, b *bundle) {
	delete(c.entries, k)
	c.bytes -= b.size
}

func (c *bundleCache) get(k cacheKey, now time.Time) *bundle {
	b := c.entries[k]
	if b == nil {
		return nil
	}
	if !now.Before(b.expires) {
		c.remove(k, b)
		return nil
	}
	return b
}

func (c *bundleCache) put(k cacheKey, b *bundle, now time.Time) {
	if c.max <= 0 {
		return
	}
	if b.size == 0 {
		b.size = bundleSize(b)
	}
	if b.size > c.maxBytes {
		return
	}
	if old := c.entries[k]; old != nil {
		c.remove(k, old)
	}
	full := func() bool { return len(c.entries) >= c.max || c.bytes+b.size > c.maxBytes }
	if full() || now.Sub(c.lastSweep) >= sweepInterval {
		c.lastSweep = now
		for key, e := range c.entries {
			if !now.Before(e.expires) {
				c.remove(key, e)
			}
		}
	}
	if full() {
		for key, e := range c.entries {
			if !full() {
				break
			}
			c.remove(key, e)
		}
	}
	c.entries[k] = b
	c.bytes += b.size
}
