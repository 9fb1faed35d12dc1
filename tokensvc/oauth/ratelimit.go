package oauth

import (
	"container/list"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Defaults of the registration limits (see WithRegistrationLimit and
// WithCallerRegistrationLimit).
const (
	// defaultRegistrationRate and defaultRegistrationBurst bound dynamic client
	// registration per route host and replica: a fleet of clients may register
	// at once, a flood from many addresses cannot fill the store with 30-day
	// registrations.
	defaultRegistrationRate  = 2 // per second
	defaultRegistrationBurst = 120
	// defaultCallerRegistrationRate and defaultCallerRegistrationBurst bound
	// registration per caller (source address; an IPv6 caller is its /64) and
	// route host: 60 at once, e.g. an office behind one NAT starting its MCP
	// clients, then one every 6 seconds. One caller spends at most half of a
	// host's burst, so it cannot lock out the others.
	defaultCallerRegistrationRate  = 1.0 / 6 // per second
	defaultCallerRegistrationBurst = 60
	// defaultMaxRegistrationCallers bounds how many callers' budgets a replica
	// remembers; beyond it the least recently seen caller is forgotten (and
	// starts again with a full budget). About 150 bytes each.
	defaultMaxRegistrationCallers = 10000
)

// registrationLimiter bounds dynamic client registration per caller and per
// route host. It is safe for concurrent use.
type registrationLimiter struct {
	hostRate, callerRate   rate.Limit
	hostBurst, callerBurst int
	maxCallers             int

	mu      sync.Mutex
	hosts   map[string]*rate.Limiter // route hosts come from configuration: bounded
	callers map[string]*list.Element // of *callerBudget; front is most recently used
	lru     *list.List
}

type callerBudget struct {
	key string
	lim *rate.Limiter
}

func newRegistrationLimiter(hostRate float64, hostBurst int, callerRate float64, callerBurst, maxCallers int) *registrationLimiter {
	return &registrationLimiter{
		hostRate: rate.Limit(hostRate), hostBurst: hostBurst,
		callerRate: rate.Limit(callerRate), callerBurst: callerBurst,
		maxCallers: max(maxCallers, 1),
		hosts:      map[string]*rate.Limiter{},
		callers:    map[string]*list.Element{},
		lru:        list.New(),
	}
}

// allow spends one registration of caller at host at now, or reports how
// long to wait. A refusal spends nothing.
func (l *registrationLimiter) allow(host, caller string, now time.Time) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.callerLimiter(host + " " + caller)
	cr := c.ReserveN(now, 1)
	if !cr.OK() {
		return false, time.Second
	}
	if d := cr.DelayFrom(now); d > 0 {
		cr.CancelAt(now)
		return false, d
	}
	h, ok := l.hosts[host]
	if !ok {
		h = rate.NewLimiter(l.hostRate, l.hostBurst)
		l.hosts[host] = h
	}
	hr := h.ReserveN(now, 1)
	if !hr.OK() {
		cr.CancelAt(now)
		return false, time.Second
	}
	if d := hr.DelayFrom(now); d > 0 {
		hr.CancelAt(now)
		cr.CancelAt(now)
		return false, d
	}
	return true, 0
}

// callerLimiter returns the budget of key, creating it (and forgetting the
// least recently used one beyond maxCallers).
func (l *registrationLimiter) callerLimiter(key string) *rate.Limiter {
	if el, ok := l.callers[key]; ok {
		l.lru.MoveToFront(el)
		return el.Value.(*callerBudget).lim
	}
	for l.lru.Len() >= l.maxCallers {
		oldest := l.lru.Back()
		l.lru.Remove(oldest)
		delete(l.callers, oldest.Value.(*callerBudget).key)
	}
	b := &callerBudget{key: key, lim: rate.NewLimiter(l.callerRate, l.callerBurst)}
	l.callers[key] = l.lru.PushFront(b)
	return b.lim
}

// tracked reports how many callers' budgets are remembered.
func (l *registrationLimiter) tracked() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lru.Len()
}

// callerAddress returns the caller that a registration is counted against:
// the peer address of the connection, or with trustedHops > 0 the address
// the outermost of that many trusted proxies saw (the trustedHops-th entry
// of X-Forwarded-For counted from the right; entries left of it are
// client-supplied and ignored). IPv6 addresses are reduced to their /64,
// which one host usually has entirely. When the header is missing, short or
// malformed, the peer address is used.
func callerAddress(r *http.Request, trustedHops int) string {
	if trustedHops > 0 {
		var hops []string
		for _, v := range r.Header.Values("X-Forwarded-For") {
			for _, a := range strings.Split(v, ",") {
				hops = append(hops, strings.TrimSpace(a))
			}
		}
		if len(hops) >= trustedHops {
			if a, ok := parseHop(hops[len(hops)-trustedHops]); ok {
				return addressKey(a)
			}
		}
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return addressKey(a)
	}
	return host
}

// parseHop parses one X-Forwarded-For entry: an address, optionally with a
// port (1.2.3.4:5, [::1]:5).
func parseHop(s string) (netip.Addr, bool) {
	if a, err := netip.ParseAddr(s); err == nil {
		return a, true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr(), true
	}
	return netip.Addr{}, false
}

func addressKey(a netip.Addr) string {
	a = a.Unmap().WithZone("")
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}
