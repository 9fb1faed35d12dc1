package plugin

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
)

// checkCacheOps runs put, get and clock steps read from ops against a small cache and holds
// it to what the decision cache promises whatever the order: a get returns nil or the bundle
// last put under that very key, never one of another key's (another credential, kind or
// route, or a key sharing the map's half), nor an expired or replaced one; and its counts
// stay within the bounds and exact through replacement, expiry, sweeps and eviction.
func checkCacheOps(t *testing.T, ops []byte) {
	t.Helper()
	now := time.Unix(1_800_000_000, 0)
	c := newBundleCache(6)
	c.maxBytes = 6 * entryOverhead
	// Keys of a few credentials, kinds and routes, and keys sharing the map's half with them.
	var keys []cacheKey
	for _, kind := range []byte{credBearer, credCookie} {
		for _, route := range []string{"r", "r2"} {
			for _, cred := range []string{"alice", "bob"} {
				keys = append(keys, c.key(kind, cred, route))
			}
		}
	}
	for i, n := 0, len(keys); i < n; i += 3 {
		keys = append(keys, cacheKey{lo: keys[i].lo, hi: keys[i].hi ^ uint64(i+1)})
	}
	last := map[cacheKey]*bundle{} // the bundle last put under each key
	for i := 0; i+1 < len(ops); i += 2 {
		op, arg := ops[i]%4, int(ops[i+1])
		k := keys[arg%len(keys)]
		switch op {
		case 0, 1: // put a bundle (sometimes a negative one, sometimes a larger one) that lives a while
			expires := now.Add(time.Duration(1+arg%5) * time.Second)
			b := &bundle{assertion: "for-" + strconv.Itoa(arg%len(keys)) + "-" + strconv.Itoa(i), expires: expires}
			switch arg % 3 {
			case 1:
				b = negative(expires)
			case 2:
				b.upstreamToken = string(make([]byte, entryOverhead))
			}
			c.put(k, b, now)
			last[k] = b
		case 2:
			got := c.get(k, now)
			if got != nil && (got != last[k] || !now.Before(got.expires)) {
				t.Fatalf("op %d: get(key %d) = %+v, last put %+v, now %v", i/2, arg%len(keys), got, last[k], now)
			}
		case 3:
			now = now.Add(time.Duration(arg%3) * time.Second)
		}
		held := 0
		for lo, b := range c.entries {
			held += b.size
			if k := (cacheKey{lo: lo, hi: b.keyHi}); last[k] != b {
				t.Fatalf("op %d: the entry under %x is not the last bundle put under its key", i/2, lo)
			}
		}
		if c.bytes != held || c.bytes > c.maxBytes || len(c.entries) > c.max {
			t.Fatalf("op %d: %d entries, %d bytes counted, %d held (bounds %d, %d)", i/2, len(c.entries), c.bytes, held, c.max, c.maxBytes)
		}
	}
}

func TestBundleCache_NeverAnotherKeysEntry(t *testing.T) {
	t.Parallel()
	for seed := range uint64(20) {
		r := rand.New(rand.NewPCG(seed, 17))
		ops := make([]byte, 4000)
		for i := range ops {
			ops[i] = byte(r.Uint32())
		}
		checkCacheOps(t, ops)
	}
}

func FuzzBundleCache_NeverAnotherKeysEntry(f *testing.F) {
	f.Add([]byte{0, 0, 2, 0, 0, 12, 2, 0, 2, 12, 3, 2, 2, 12})
	f.Add([]byte{0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0, 7, 2, 1, 2, 7, 3, 5, 2, 3})
	f.Fuzz(checkCacheOps)
}
