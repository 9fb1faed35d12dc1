package obs

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/mcpmesh/gateway/tokensvc/oauth"
)

// Namespace prefixes every metric name.
const Namespace = "mcp_gateway_tokensvc"

// SessionCounter counts the sessions that are live (neither revoked nor expired) at now.
// The live-sessions gauge calls it on each scrape.
type SessionCounter interface {
	CountLiveSessions(ctx context.Context, now time.Time) (int64, error)
}

// sessionCountTimeout bounds the store query a scrape makes.
const sessionCountTimeout = 2 * time.Second

// Metrics holds the token service's Prometheus collectors, registered on its own registry
// (never the global one). Make one per process with NewMetrics and hand it to every server
// built in that process (a reload keeps counting in the same series). It is safe for
// concurrent use. A nil *Metrics is valid and records nothing.
type Metrics struct {
	reg *prometheus.Registry

	httpRequests *prometheus.CounterVec
	httpDuration *prometheus.HistogramVec

	tokensIssued      *prometheus.CounterVec
	tokensRefreshed   prometheus.Counter
	refreshReused     prometheus.Counter
	codesReplayed     prometheus.Counter
	registrations     *prometheus.CounterVec
	documentFetches   *prometheus.CounterVec
	idpDuration       *prometheus.HistogramVec
	idpErrors         *prometheus.CounterVec
	storeDuration     *prometheus.HistogramVec
	storeErrors       *prometheus.CounterVec
	sessionsCollector *liveSessions
}

// NewMetrics registers the token service's metrics (and the Go runtime and process
// collectors) on a new registry.
func NewMetrics() *Metrics {
	reg := prometheus.NewRegistry()
	f := func(c prometheus.Collector) { reg.MustRegister(c) }
	m := &Metrics{reg: reg}
	m.httpRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "http_requests_total",
		Help: "HTTP requests answered, by listener (public or internal), method, endpoint (the route pattern; unmatched for none) and status code.",
	}, []string{"listener", "method", "endpoint", "code"})
	m.httpDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Name: "http_request_duration_seconds",
		Help:    "Time to answer an HTTP request, by listener, method and endpoint.",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
	}, []string{"listener", "method", "endpoint"})
	m.tokensIssued = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "tokens_issued_total",
		Help: "Access tokens issued other than by refresh: grant authorization_code (a code redeemed), mcp_client_route (the check API minted an mcp.client route's token) or client_credentials (a service identity's token).",
	}, []string{"grant"})
	m.tokensRefreshed = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: Namespace, Name: "tokens_refreshed_total",
		Help: "Refresh tokens rotated with a new access token issued.",
	})
	m.refreshReused = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: Namespace, Name: "refresh_token_reuse_detected_total",
		Help: "Rotated refresh tokens presented again (the grant was revoked).",
	})
	m.codesReplayed = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: Namespace, Name: "authorization_codes_replayed_total",
		Help: "Redeemed authorization codes presented again (what they yielded was revoked).",
	})
	m.registrations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "client_registrations_total",
		Help: "Dynamic client registrations by outcome: created, rate_limited, invalid, error.",
	}, []string{"outcome"})
	m.documentFetches = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "client_metadata_document_fetches_total",
		Help: "Client ID metadata document fetches (cache misses) by outcome: fetched, unreachable, forbidden_address, invalid.",
	}, []string{"outcome"})
	m.idpDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Name: "idp_request_duration_seconds",
		Help:    "Time of identity provider calls by operation (auth_code_url, exchange, refresh, discover), failures included.",
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
	}, []string{"operation"})
	m.idpErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "idp_errors_total",
		Help: "Failed identity provider calls by operation and kind: refused, unavailable, invalid_response, other.",
	}, []string{"operation", "kind"})
	m.storeDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Name: "store_operation_duration_seconds",
		Help:    "Time of store operations by method (the store.Store method name).",
		Buckets: []float64{.0001, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1},
	}, []string{"method"})
	m.storeErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "store_errors_total",
		Help: "Store operations that failed, by method. Answers (not found, already exists, refresh reused, conflict) are not failures.",
	}, []string{"method"})
	m.sessionsCollector = &liveSessions{desc: prometheus.NewDesc(Namespace+"_live_sessions",
		"Sessions neither revoked nor expired, counted in the store on each scrape (all replicas' sessions).", nil, nil)}
	for _, c := range []prometheus.Collector{m.httpRequests, m.httpDuration, m.tokensIssued, m.tokensRefreshed,
		m.refreshReused, m.codesReplayed, m.registrations, m.documentFetches, m.idpDuration, m.idpErrors,
		m.storeDuration, m.storeErrors, m.sessionsCollector,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})} {
		f(c)
	}
	// Series that exist from the start, so rate() and absent() work before the first event.
	for _, g := range []string{"authorization_code", "mcp_client_route", "client_credentials"} {
		m.tokensIssued.WithLabelValues(g)
	}
	for _, o := range []string{oauth.RegistrationCreated, oauth.RegistrationRateLimited, oauth.RegistrationInvalid, oauth.RegistrationError} {
		m.registrations.WithLabelValues(o)
	}
	for _, o := range []string{oauth.DocumentFetched, oauth.DocumentUnreachable, oauth.DocumentForbidden, oauth.DocumentInvalid} {
		m.documentFetches.WithLabelValues(o)
	}
	return m
}

// Registry returns the registry the metrics are registered on.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the metrics in the Prometheus exposition formats.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// SetSessionCounter sets what the live-sessions gauge counts with, with the clock it
// counts at; nil (the default) omits the gauge from scrapes.
func (m *Metrics) SetSessionCounter(c SessionCounter, now func() time.Time) {
	if m == nil {
		return
	}
	if c == nil {
		m.sessionsCollector.src.Store(nil)
		return
	}
	m.sessionsCollector.src.Store(&sessionSource{c: c, now: now})
}

// OAuthEvents returns the receiver of the authorization server's events (oauth.WithEvents).
func (m *Metrics) OAuthEvents() oauth.Events { return oauthEvents{m} }

type oauthEvents struct{ m *Metrics }

func (e oauthEvents) TokensIssued()      { e.m.tokensIssued.WithLabelValues("authorization_code").Inc() }
func (e oauthEvents) ClientTokenIssued() { e.m.tokensIssued.WithLabelValues("mcp_client_route").Inc() }
func (e oauthEvents) TokensRefreshed()   { e.m.tokensRefreshed.Inc() }
func (e oauthEvents) RefreshReused()     { e.m.refreshReused.Inc() }
func (e oauthEvents) CodeReplayed()      { e.m.codesReplayed.Inc() }
func (e oauthEvents) Registration(outcome string) {
	e.m.registrations.WithLabelValues(outcome).Inc()
}
func (e oauthEvents) MetadataDocumentFetch(outcome string) {
	e.m.documentFetches.WithLabelValues(outcome).Inc()
}

// liveSessions is the live-sessions gauge, computed on collection.
type liveSessions struct {
	desc *prometheus.Desc
	src  atomic.Pointer[sessionSource]
}

type sessionSource struct {
	c   SessionCounter
	now func() time.Time
}

func (l *liveSessions) Describe(ch chan<- *prometheus.Desc) { ch <- l.desc }

func (l *liveSessions) Collect(ch chan<- prometheus.Metric) {
	src := l.src.Load()
	if src == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), sessionCountTimeout)
	defer cancel()
	n, err := src.c.CountLiveSessions(ctx, src.now())
	if err != nil {
		ch <- prometheus.NewInvalidMetric(l.desc, err)
		return
	}
	ch <- prometheus.MustNewConstMetric(l.desc, prometheus.GaugeValue, float64(n))
}

// ServiceTokenIssued counts a service identity's token (client credentials).
func (e oauthEvents) ServiceTokenIssued() {
	e.m.tokensIssued.WithLabelValues("client_credentials").Inc()
}
