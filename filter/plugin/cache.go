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
	// keyHi is the half of its cache key that the cache's map is not keyed by (put sets it).
	keyHi uint64
	// size approximates the memory the entry holds (bundleSize), set by put.
	size int
}

// cacheKey is a keyed PRF of (credential kind, route ID, credential) — SipHash-2-4-128 under
// the cache's random key: the credential itself is never kept in memory longer than the
// request, and without the key no two credentials or routes can be made to share an entry
// (filter/internal/siphash). SHA-256 did the same at about 25,000 instructions a block in the
// wasm filter (BENCHMARKS.md). The cache's map is keyed by lo, and each entry keeps hi: a
// map keyed by 64 bits is a fraction of the cost of one keyed by the credential's 128 bits
// and the route ID's string in the wasm filter, and an entry is only found with both halves.
type cacheKey struct{ lo, hi uint64 }

// key returns the cache key of a credential of the given kind on a route. The route ID goes
// in with its length, so that no (route ID, credential) pair reads as another.
func (c *bundleCache) key(kind byte, credential, routeID string) cacheKey {
	var buf [160]byte
	b := append(buf[:0], kind)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(routeID)))
	b = append(b, routeID...)
	b = append(b, credential...)
	sum := siphash.Sum128(c.hashKey, b)
	return cacheKey{lo: binary.LittleEndian.Uint64(sum[:8]), hi: binary.LittleEndian.Uint64(sum[8:])}
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
	entries       map[uint64]*bundle // by cacheKey.lo
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
	return &bundleCache{hashKey: siphash.NewKey(k), max: max, maxBytes: maxCacheBytes, entries: make(map[uint64]*bundle, 64)}
}

func (c *bundleCache) remove(lo uint64, b *bundle) {
	delete(c.entries, lo)
	c.bytes -= b.size
}

// get returns the live bundle of key k, or nil. An entry whose key shares only k.lo is
// another key's (left alone; 2^-64 for two keys under the random PRF key).
func (c *bundleCache) get(k cacheKey, now time.Time) *bundle {
	b := c.entries[k.lo]
	if b == nil || b.keyHi != k.hi {
		return nil
	}
	if !now.Before(b.expires) {
		c.remove(k.lo, b)
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
	if old := c.entries[k.lo]; old != nil {
		c.remove(k.lo, old) // k's entry, or one sharing k.lo: put keeps one of them
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
	b.keyHi = k.hi
	c.entries[k.lo] = b
	c.bytes += b.size
}
