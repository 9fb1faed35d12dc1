package gateway

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultGrace is how long Live.Swap lets requests in flight on the replaced gateway finish
// before it is retired anyway (an event stream can last for ever).
const DefaultGrace = 30 * time.Second

// ErrAddressesChanged refuses a swap to a gateway that would listen on other addresses: the
// listeners stay open across a reload, so the set of addresses cannot change.
var ErrAddressesChanged = errors.New("the listen addresses changed (a route's from or authenticate_service_url); restart the local gateway instead")

// Live is an http.Handler in front of a Gateway that can be replaced while it serves (the
// local gateway's reload). Each request runs to its end on the gateway that was current when
// it arrived; Swap makes a new gateway current for the requests that arrive after it, and
// retires the old one once its requests in flight have finished or the grace period has
// passed, whichever comes first.
//
// Live also keeps the filter's counters monotonic across swaps: Metrics adds up the counters
// of retired, retiring and current gateways (Envoy keeps its stats across a plugin reload).
type Live struct {
	cur   atomic.Pointer[generation]
	grace time.Duration

	mu       sync.Mutex
	retiring []*generation
	retired  map[metricKey]Metric // summed counters and histograms of retired gateways
	wg       sync.WaitGroup       // retirements under way
}

type generation struct {
	gw       *Gateway
	inflight atomic.Int64
}

// NewLive serves g; grace bounds how long a replaced gateway's requests may take (0:
// DefaultGrace).
func NewLive(g *Gateway, grace time.Duration) *Live {
	if grace <= 0 {
		grace = DefaultGrace
	}
	l := &Live{grace: grace, retired: map[metricKey]Metric{}}
	l.cur.Store(&generation{gw: g})
	return l
}

// Current returns the gateway that serves new requests.
func (l *Live) Current() *Gateway { return l.cur.Load().gw }

// ServeHTTP runs r on the current gateway.
func (l *Live) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	gen := l.acquire()
	defer gen.inflight.Add(-1)
	gen.gw.ServeHTTP(w, r)
}

// acquire counts a request in on the current generation. The generation is checked again
// after counting, so that a retirement that saw no request in flight never misses one.
func (l *Live) acquire() *generation {
	for {
		gen := l.cur.Load()
		gen.inflight.Add(1)
		if l.cur.Load() == gen {
			return gen
		}
		gen.inflight.Add(-1)
	}
}

// Swap makes next the current gateway. It refuses (ErrAddressesChanged) a gateway whose
// Addresses differ from the current one's. The old gateway is retired in the background once
// its requests in flight have finished, or after the grace period: its counters are kept,
// then retire is called (typically to close it and the token service it used).
func (l *Live) Swap(next *Gateway, retire func(old *Gateway)) error {
	old := l.cur.Load()
	if a, b := old.gw.Addresses(), next.Addresses(); !slices.Equal(a, b) {
		return fmt.Errorf("%w: %v, now %v", ErrAddressesChanged, a, b)
	}
	l.mu.Lock()
	l.retiring = append(l.retiring, old)
	l.mu.Unlock()
	l.cur.Store(&generation{gw: next})
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		deadline := time.Now().Add(l.grace)
		for old.inflight.Load() > 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		l.mu.Lock()
		for _, m := range old.gw.host.Metrics() {
			l.retired[keyOf(m)] = addMetric(l.retired[keyOf(m)], m)
		}
		l.retiring = slices.DeleteFunc(l.retiring, func(g *generation) bool { return g == old })
		l.mu.Unlock()
		if retire != nil {
			retire(old.gw)
		}
	}()
	return nil
}

// Wait waits for the retirements under way.
func (l *Live) Wait() { l.wg.Wait() }

// ListenAndServe listens on the current gateway's Addresses and serves until ctx is done.
func (l *Live) ListenAndServe(ctx context.Context) error {
	ls, err := Listen(ctx, l.Current().Addresses())
	if err != nil {
		return err
	}
	return l.Serve(ctx, ls)
}

// Serve serves on listeners the caller opened until ctx is done, with the timeouts and
// logger of the gateway current at the start.
func (l *Live) Serve(ctx context.Context, ls []net.Listener) error {
	g := l.Current()
	return serve(ctx, ls, l, g.timeouts, g.logger, g.listenerIsTLS, func() *tls.Certificate { return l.Current().cert })
}
