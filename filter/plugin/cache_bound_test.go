package plugin

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

func keyN(i int) cacheKey {
	return keyCache.key('b', "token-"+strconv.Itoa(i), "https://mcp.example.com")
}

// keyCache makes the keys of the bound tests; any cache's keys fit any cache's map.
var keyCache = newBundleCache(0)

// The cache key separates what must not share an entry — credentials, their kinds, routes —
// is stable within one cache, and differs between caches (each draws its own PRF key).
func TestCacheKey_SeparatesCredentialsKindsAndRoutes(t *testing.T) {
	t.Parallel()
	c := newBundleCache(10)
	base := c.key('b', "bmcp_token", "route-a")
	if c.key('b', "bmcp_token", "route-a") != base {
		t.Fatal("the same credential on the same route gave two keys")
	}
	for name, k := range map[string]cacheKey{
		"another credential":                   c.key('b', "bmcp_tokem", "route-a"),
		"a longer credential":                  c.key('b', "bmcp_token\x00", "route-a"),
		"another kind":                         c.key('c', "bmcp_token", "route-a"),
		"another route":                        c.key('b', "bmcp_token", "route-b"),
		"route and credential split elsewhere": c.key('b', "_token", "route-abmcp"),
		"another cache":                        newBundleCache(10).key('b', "bmcp_token", "route-a"),
	} {
		if k == base {
			t.Errorf("%s: same cache key", name)
		}
	}
}

// The map is keyed by half of the key: an entry is found only with both halves, and a key
// sharing the half replaces the entry (keeping the byte count exact) without reading it.
func TestBundleCache_FindsEntriesOnlyByTheWholeKey(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	c := newBundleCache(10)
	k := c.key(credBearer, "tok", "route-a")
	other := cacheKey{lo: k.lo, hi: k.hi ^ 1}
	c.put(k, &bundle{assertion: "a", expires: now.Add(time.Hour)}, now)
	if c.get(other, now) != nil {
		t.Fatal("a key sharing only the map's half found the entry")
	}
	if c.get(k, now) == nil {
		t.Fatal("the entry was lost by the other key's lookup")
	}
	c.put(other, &bundle{assertion: "bb", expires: now.Add(time.Hour)}, now)
	if c.get(k, now) != nil || c.get(other, now) == nil || len(c.entries) != 1 || c.bytes != c.entries[k.lo].size {
		t.Fatalf("after the other key's put: %d entries, %d bytes", len(c.entries), c.bytes)
	}
}

// The cache holds at most max entries and maxBytes (approximately); making room sweeps the
// expired entries first and only then evicts live ones; the byte count stays exact through
// replacement, expiry and eviction.
func TestBundleCache_BoundedByEntriesAndBytes(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	c := newBundleCache(1000)
	c.maxBytes = 20_000
	big := strings.Repeat("a", 1000)
	sum := func() int {
		n := 0
		for _, b := range c.entries {
			n += b.size
		}
		return n
	}
	for i := range 200 {
		c.put(keyN(i), &bundle{assertion: big, expires: now.Add(time.Minute)}, now)
		if c.bytes > c.maxBytes || c.bytes != sum() {
			t.Fatalf("after %d puts: %d bytes counted, %d held, bound %d", i+1, c.bytes, sum(), c.maxBytes)
		}
	}
	if n := len(c.entries); n == 0 || n > 20_000/1000 {
		t.Fatalf("%d entries of ~1.2 KB under a 20 KB bound", n)
	}

	// Expired entries go first: one live entry among expired ones survives a full cache.
	c = newBundleCache(10)
	for i := range 9 {
		c.put(keyN(i), &bundle{assertion: "x", expires: now.Add(time.Second)}, now)
	}
	c.put(keyN(100), &bundle{assertion: "live", expires: now.Add(time.Hour)}, now)
	later := now.Add(2 * time.Second)
	c.put(keyN(101), &bundle{assertion: "new", expires: later.Add(time.Hour)}, later)
	if c.get(keyN(100), later) == nil || c.get(keyN(101), later) == nil || len(c.entries) != 2 {
		t.Fatalf("after the sweep: %d entries, live ones kept: %v %v", len(c.entries), c.get(keyN(100), later) != nil, c.get(keyN(101), later) != nil)
	}
	// Replacing an entry and expiring one keep the count exact.
	c.put(keyN(100), &bundle{assertion: big, expires: later.Add(time.Hour)}, later)
	c.get(keyN(101), later.Add(2*time.Hour))
	if c.bytes != sum() || len(c.entries) != 0 && c.bytes == 0 {
		t.Fatalf("bytes %d, held %d", c.bytes, sum())
	}
	// An entry larger than the whole bound is not cached (it would evict everything).
	c.maxBytes = 500
	c.put(keyN(7), &bundle{assertion: big, expires: later.Add(time.Hour)}, later)
	if c.get(keyN(7), later) != nil {
		t.Fatal("an entry over the byte bound was cached")
	}
}

// Expired entries are dropped at least every sweepInterval even when the cache is far from
// full, so memory follows the live entries (each refresh leaves an expired bundle behind).
func TestBundleCache_SweepsExpiredEntriesPeriodically(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	c := newBundleCache(1000)
	for i := range 100 {
		c.put(keyN(i), &bundle{assertion: "x", expires: now.Add(time.Second)}, now)
	}
	later := now.Add(sweepInterval)
	c.put(keyN(500), &bundle{assertion: "y", expires: later.Add(time.Minute)}, later)
	if len(c.entries) != 1 || c.bytes != c.entries[keyN(500).lo].size {
		t.Fatalf("%d entries (%d bytes) after the sweep, want only the live one", len(c.entries), c.bytes)
	}
}

// BenchmarkBundleCache_Hit is the cache's part of a cached request: the key of a bearer
// token on a route, and the lookup that finds its live bundle among 100 entries.
func BenchmarkBundleCache_Hit(b *testing.B) {
	now := time.Unix(1_800_000_000, 0)
	c := newBundleCache(1000)
	const route = "https://mcp.example.com/mcp"
	for i := range 100 {
		c.put(c.key(credBearer, "bearer-token-"+strconv.Itoa(i), route), &bundle{expires: now.Add(time.Hour)}, now)
	}
	b.ResetTimer()
	for range b.N {
		if c.get(c.key(credBearer, "bearer-token-42", route), now) == nil {
			b.Fatal("miss")
		}
	}
}
