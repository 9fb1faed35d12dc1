package plugin

import (
	"encoding/binary"
	"math/rand/v2"
	"time"

	"github.com/mcpmesh/gateway/filter/internal/siphash"
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

// cacheKey is a keyed PRF of (credential kind, credential) — SipHash-2-4-128 under the
// cache's random key — with the route ID: the credential itself is never kept in memory longer
// than the request, and without the key no two credentials can be made to share an entry
// (filter/internal/siphash). SHA-256 did the same at about 25,000 instructions a block in the
// wasm filter (BENCHMARKS.md).
type cacheKey struct {
	credential [16]byte
	routeID    string
}

// key returns the cache key of a credential of the given kind on a route.
func (c *bundleCache) key(kind byte, credential, routeID string) cacheKey {
	var buf [128]byte
	b := append(buf[:0], kind)
	b = append(b, credential...)
	return cacheKey{credential: siphash.Sum128(c.hashKey, b), routeID: routeID}
}

// bundleCache is the per-VM cache of decision bundles and refusals. It is bounded by entries
// (max) and by approximate bytes (maxBytes). To make room it first sweeps every expired entry,
// then evicts arbitrary live entries (Go's map order: no access pattern can pin an entry or
// force a particular one out) until the new entry fits. An evicted bundle costs one more
// check call, never a wrong decision.
type bundleCache struct {
	// hashKey is drawn when the cache is made (math/rand/v2: the runtime's ChaCha8, seeded
	// by the host's random_get) and never leaves it; the keys' safety does not rest on its
	// secrecy (filter/internal/siphash).
	hashKey       siphash.Key
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
	var k [16]byte
	binary.LittleEndian.PutUint64(k[:8], rand.Uint64())
	binary.LittleEndian.PutUint64(k[8:], rand.Uint64())
	return &bundleCache{hashKey: siphash.NewKey(k), max: max, maxBytes: maxCacheBytes, entries: make(map[cacheKey]*bundle, 64)}
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
