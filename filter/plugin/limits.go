package plugin

import (
	"time"

	"github.com/mcpmesh/gateway/shared/policy"
)

// Bounds that keep one VM's work and memory finite whatever the traffic
// (docs/filter.md, "Bounded work and memory").
const (
	// maxInflightChecks bounds the check calls one VM has outstanding. A request that would
	// need another one while that many are in flight (a flood of distinct garbage tokens, a
	// token service answering slowly) is answered 503 at once, without a call: the filter
	// never turns traffic into unbounded work for the token service.
	maxInflightChecks = 128
	// negativeTTL bounds how long a VM remembers that the token service refused a bearer
	// token (invalid_token): the same token again is answered 401 without a call. Never
	// longer than the configured cache TTL. A refused token cannot become valid (tokens are
	// random and stored before they are handed out), so remembering the refusal is safe.
	negativeTTL = 5 * time.Second
	// maxCacheBytes bounds the approximate memory the decision cache of one VM holds
	// (bundles and negative entries, with their keys), beside maxCacheEntries.
	maxCacheBytes = 8 << 20
	// entryOverhead approximates what an entry costs beyond its strings: the key, the map
	// slot, the bundle struct and the policy input.
	entryOverhead = 256
	// sessionBindingCost is what a bundle's session binding counts for: its key and the last
	// session IDs it wrapped and verified. It is the figure of the HMAC-SHA256 state the
	// binding held until it kept only the key, unchanged so that the cache's bounds admit
	// the same entries as before.
	sessionBindingCost = 640
)

// negative is the cache's record of a refused bearer token: a bundle with no identity.
func negative(expires time.Time) *bundle {
	return &bundle{expires: expires, refused: true, size: entryOverhead}
}

// bundleSize approximates the memory a cached bundle holds.
func bundleSize(b *bundle) int {
	n := entryOverhead + len(b.assertion) + len(b.upstreamToken) + len(b.clientToken) +
		len(b.input.User) + len(b.input.Email) + len(b.input.Name)
	if b.session.key != nil {
		n += sessionBindingCost
	}
	for _, g := range b.input.Groups {
		n += len(g) + 16
	}
	for k, vs := range b.input.Claims {
		n += len(k) + 48
		for _, v := range vs {
			n += len(v) + 16
		}
	}
	return n
}

// rememberRefusal caches the token service's refusal of the stream's bearer token.
func (s *stream) rememberRefusal(key cacheKey) {
	if s.credKind != credBearer {
		return
	}
	ttl := negativeTTL
	if cfg := time.Duration(s.f.cfg.CacheTTLSeconds) * time.Second; cfg < ttl {
		ttl = cfg
	}
	if ttl <= 0 {
		return
	}
	now := s.h.Now()
	s.f.cache.put(key, negative(now.Add(ttl)), now)
}

// refusedFromCache answers a bearer token the token service refused a moment ago: 401
// invalid_token, as the refusal itself was answered.
func (s *stream) refusedFromCache() Action {
	s.refuse(metricUnauthenticated, policy.ReasonTokenInvalid)
	s.replyUnauthorized("invalid_token", "the access token is invalid, expired or not meant for this server")
	return Pause
}

// endCheckCall counts the stream's check call as no longer outstanding, once: at its answer,
// or when the stream ends before it (limits: maxInflightChecks).
func (s *stream) endCheckCall() {
	if s.pending {
		s.pending = false
		s.f.inflight--
	}
}

// checksExhausted answers a request that would need a check call while the VM has
// maxInflightChecks outstanding: 503 at once.
func (s *stream) checksExhausted() Action {
	s.f.metrics.inc(metricCheckShed)
	s.refuse(metricUnavailable, policy.ReasonTokenServiceUnavailable)
	s.replyError(503, "temporarily_unavailable", "the gateway cannot verify credentials right now")
	return Pause
}
