package obs

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcpmesh/gateway/tokensvc/upstream"
)

// UpstreamEvents returns the receiver of the upstream OAuth service's events
// (upstream.WithEvents): the counters upstream_connects_total{outcome} and
// upstream_token_refreshes_total{outcome}. Servers that share m (a reload) share the series.
func (m *Metrics) UpstreamEvents() upstream.Events {
	if m == nil {
		return nil
	}
	e := upstreamEvents{
		connects: registerCounterVec(m.reg, prometheus.CounterOpts{
			Namespace: Namespace, Name: "upstream_connects_total",
			Help: "Upstream OAuth callbacks, by outcome: connected, refused (by the provider or the user, or not from the provider), failed (the code exchange failed).",
		}, "outcome"),
		refreshes: registerCounterVec(m.reg, prometheus.CounterOpts{
			Namespace: Namespace, Name: "upstream_token_refreshes_total",
			Help: "Internal Token refreshes at the upstream token endpoint, by outcome: refreshed, refused (invalid_grant: the token was deleted), failed (kept).",
		}, "outcome"),
	}
	for _, o := range []string{upstream.ConnectConnected, upstream.ConnectRefused, upstream.ConnectFailed} {
		e.connects.WithLabelValues(o)
	}
	for _, o := range []string{upstream.RefreshRefreshed, upstream.RefreshRefused, upstream.RefreshFailed} {
		e.refreshes.WithLabelValues(o)
	}
	return e
}

// registerCounterVec registers a counter vector on reg, or returns the one registered
// already under that name.
func registerCounterVec(reg *prometheus.Registry, opts prometheus.CounterOpts, label string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(opts, []string{label})
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(*prometheus.CounterVec); ok {
				return existing
			}
		}
		panic("obs: register " + opts.Name + ": " + err.Error())
	}
	return c
}

type upstreamEvents struct {
	connects, refreshes *prometheus.CounterVec
}

func (e upstreamEvents) Connect(outcome string) { e.connects.WithLabelValues(outcome).Inc() }
func (e upstreamEvents) Refresh(outcome string) { e.refreshes.WithLabelValues(outcome).Inc() }
