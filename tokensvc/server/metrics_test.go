package server

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/mcpmesh/gateway/shared/checkapi"
	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/tokensvc/obs"
	"github.com/mcpmesh/gateway/tokensvc/secret"
	"github.com/mcpmesh/gateway/tokensvc/store/memory"
)

// scrape GETs /metrics on the internal handler and parses it with the Prometheus text parser.
func scrape(t *testing.T, h http.Handler) map[string]*dto.MetricFamily {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, "http://tokensvc.internal"+paths.Metrics, nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", rec.Code, rec.Body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(rec.Body.String()))
	if err != nil {
		t.Fatalf("parse /metrics: %v\n%s", err, rec.Body)
	}
	return fams
}

// value is the value of the series of family name with exactly labels (a counter, gauge, or
// a histogram's sample count); -1 if absent.
func value(fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	f := fams[name]
	if f == nil {
		return -1
	}
next:
	for _, m := range f.Metric {
		want := map[string]string{}
		for i := 0; i+1 < len(labels); i += 2 {
			want[labels[i]] = labels[i+1]
		}
		if len(m.Label) != len(want) {
			continue
		}
		for _, l := range m.Label {
			if want[l.GetName()] != l.GetValue() {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	return -1
}

const metricsConfigYAML = testConfigYAML + `
mcp_allowed_client_id_domains: [localhost]
`

// A scripted session: every listed metric changes as expected, read back by scraping
// /metrics with the Prometheus text parser.
func TestMetrics_ScriptedSessionMovesEveryMetric(t *testing.T) {
	t.Parallel()
	cfg, err := config.Parse([]byte(metricsConfigYAML), nil)
	if err != nil {
		t.Fatal(err)
	}
	clock := &testClock{t: time.Unix(1_700_000_000, 0)}
	provider := newIDP()
	provider.SignInAs = "alice"
	st := memory.New()
	srv, err := New(context.Background(), cfg, WithStore(st), WithConnector(provider), WithClock(clock.now),
		WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	in := srv.InternalHandler()
	before := scrape(t, in)
	const ns = "mcp_gateway_tokensvc_"
	zero := []struct {
		name   string
		labels []string
	}{
		{ns + "tokens_issued_total", []string{"grant", "authorization_code"}},
		{ns + "tokens_issued_total", []string{"grant", "mcp_client_route"}},
		{ns + "tokens_refreshed_total", nil},
		{ns + "refresh_token_reuse_detected_total", nil},
		{ns + "authorization_codes_replayed_total", nil},
		{ns + "client_registrations_total", []string{"outcome", "created"}},
		{ns + "client_registrations_total", []string{"outcome", "invalid"}},
		{ns + "client_registrations_total", []string{"outcome", "rate_limited"}},
		{ns + "client_metadata_document_fetches_total", []string{"outcome", "forbidden_address"}},
		{ns + "live_sessions", nil},
	}
	for _, z := range zero {
		if got := value(before, z.name, z.labels...); got != 0 {
			t.Errorf("before the session: %s%v = %v, want 0", z.name, z.labels, got)
		}
	}

	jar, _ := cookiejar.New(nil)
	b := &jarBrowser{t: t, h: srv.PublicHandler(), jar: jar, secrets: map[string]string{}}
	const mcp = "https://mcp.example.com"
	const cb = "https://client.example/cb"
	register := func(body, caller string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, mcp+paths.Register, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.RemoteAddr = caller + ":1234"
		rec := httptest.NewRecorder()
		srv.PublicHandler().ServeHTTP(rec, r)
		return rec
	}
	rec := register(`{"redirect_uris":["`+cb+`"],"grant_types":["authorization_code","refresh_token"],"client_name":"x"}`, "192.0.2.1")
	var reg struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &reg); err != nil || reg.ClientSecret == "" {
		t.Fatalf("register: %d %s", rec.Code, rec.Body)
	}
	register(`{"redirect_uris":[]}`, "192.0.2.1") // invalid
	limited := 0
	for i := 0; i < 100 && limited == 0; i++ { // one caller's burst runs out
		if register(`{"redirect_uris":["`+cb+`"]}`, "192.0.2.2").Code == http.StatusTooManyRequests {
			limited++
		}
	}
	if limited == 0 {
		t.Fatal("no registration was rate limited")
	}

	// Sign-in, consent, code, tokens.
	verifier := secret.NewToken()
	sum := sha256.Sum256([]byte(verifier))
	q := url.Values{"response_type": {"code"}, "client_id": {reg.ClientID}, "redirect_uri": {cb}, "state": {"st"},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"}, "resource": {demoRoute}}
	page := b.follow(mcp+paths.Authorize+"?"+q.Encode(), "")
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"[\s\S]*name="request" value="([^"]+)"`).FindStringSubmatch(page.Body.String())
	if page.Code != http.StatusOK || m == nil {
		t.Fatalf("consent page: %d %s", page.Code, page.Body)
	}
	rec = b.do(http.MethodPost, mcp+paths.Consent, url.Values{"csrf": {m[1]}, "request": {m[2]}, "action": {"approve"}}, nil)
	loc, _ := url.Parse(rec.Header().Get("Location"))
	code := loc.Query().Get("code")
	if code == "" {
		t.Fatalf("consent: %d %q", rec.Code, rec.Header().Get("Location"))
	}
	mid := scrape(t, in)
	if got := value(mid, ns+"live_sessions"); got != 1 {
		t.Errorf("live_sessions after sign-in = %v, want 1", got)
	}
	basic := http.Header{}
	basic.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(reg.ClientID)+":"+url.QueryEscape(reg.ClientSecret))))
	tok := func(form url.Values) map[string]any {
		rec := b.do(http.MethodPost, mcp+paths.Token, form, basic)
		var out map[string]any
		_ = json.Unmarshal(rec.Body.Bytes(), &out)
		return out
	}
	codeForm := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "code_verifier": {verifier}, "redirect_uri": {cb}, "resource": {demoRoute}}
	first := tok(codeForm)
	at, _ := first["access_token"].(string)
	rt, _ := first["refresh_token"].(string)
	if at == "" || rt == "" {
		t.Fatalf("token response %v", first)
	}
	e := &testEnv{t: t, cfg: cfg, store: st, clock: clock, srv: srv}
	if status, _ := e.check(checkapi.Request{RouteID: demoRoute, Host: "mcp.example.com", Token: at}); status != http.StatusOK {
		t.Fatalf("check: %d", status)
	}
	// A cookie session on the mcp.client route: the check API mints a client token.
	bob := e.session("bob")
	if status, resp := e.check(checkapi.Request{RouteID: appRoute, Host: "app.example.com", Cookie: e.cookie(bob, "app.example.com")}); status != http.StatusOK || resp.ClientToken == "" {
		t.Errorf("check on the mcp.client route: %d %+v", status, resp)
	}
	tok(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}}) // refreshed
	clock.add(config.DefaultRefreshTokenReuseInterval + time.Second)
	tok(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}}) // reuse
	tok(codeForm)                                                           // code replay
	// A URL client ID on a non-public address: the fetch is refused.
	b.do(http.MethodGet, mcp+paths.Authorize+"?"+url.Values{"response_type": {"code"}, "client_id": {"https://localhost/client.json"},
		"redirect_uri": {cb}, "code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"}}.Encode(), nil, nil)
	// Sign-out.
	page = b.do(http.MethodGet, mcp+paths.SignOut, nil, nil)
	if m := regexp.MustCompile(`name="csrf_token" value="([^"]+)"`).FindStringSubmatch(page.Body.String()); m != nil {
		b.do(http.MethodPost, mcp+paths.SignOut, url.Values{"csrf_token": {m[1]}}, nil)
	} else {
		t.Fatalf("sign-out page: %d", page.Code)
	}
	// The provider goes down: readiness fails and the discovery error is counted.
	b.do(http.MethodGet, mcp+"/nope/"+secret.NewToken(), nil, nil) // unmatched
	provider.Unavailable = true
	rr := httptest.NewRecorder()
	in.ServeHTTP(rr, httptest.NewRequest(http.MethodGet, "http://tokensvc.internal"+paths.Ready, nil))
	if rr.Code != http.StatusServiceUnavailable {
		t.Errorf("readyz with the provider down: %d", rr.Code)
	}

	after := scrape(t, in)
	want := []struct {
		name   string
		labels []string
		value  float64 // -2: any value > 0
	}{
		{ns + "tokens_issued_total", []string{"grant", "authorization_code"}, 1},
		{ns + "tokens_issued_total", []string{"grant", "mcp_client_route"}, 1},
		{ns + "tokens_refreshed_total", nil, 1},
		{ns + "refresh_token_reuse_detected_total", nil, 1},
		{ns + "authorization_codes_replayed_total", nil, 1},
		{ns + "client_registrations_total", []string{"outcome", "created"}, -2},
		{ns + "client_registrations_total", []string{"outcome", "invalid"}, 1},
		{ns + "client_registrations_total", []string{"outcome", "rate_limited"}, 1},
		{ns + "client_metadata_document_fetches_total", []string{"outcome", "forbidden_address"}, 1},
		{ns + "live_sessions", nil, 1}, // bob's; alice signed out
		{ns + "http_requests_total", []string{"listener", "public", "method", "POST", "endpoint", paths.Register, "code", "201"}, -2},
		{ns + "http_requests_total", []string{"listener", "public", "method", "POST", "endpoint", paths.Register, "code", "429"}, 1},
		{ns + "http_requests_total", []string{"listener", "public", "method", "POST", "endpoint", paths.Token, "code", "200"}, 2},
		{ns + "http_requests_total", []string{"listener", "public", "method", "GET", "endpoint", obs.Unmatched, "code", "404"}, 1},
		{ns + "http_requests_total", []string{"listener", "internal", "method", "POST", "endpoint", paths.Check, "code", "200"}, 2},
		{ns + "http_requests_total", []string{"listener", "internal", "method", "GET", "endpoint", paths.Ready, "code", "503"}, 1},
		{ns + "http_request_duration_seconds", []string{"listener", "public", "method", "POST", "endpoint", paths.Token}, 4},
		{ns + "http_request_duration_seconds", []string{"listener", "internal", "method", "POST", "endpoint", paths.Check}, 2},
		{ns + "idp_request_duration_seconds", []string{"operation", "auth_code_url"}, -2},
		{ns + "idp_request_duration_seconds", []string{"operation", "exchange"}, -2},
		{ns + "idp_errors_total", []string{"operation", "discover", "kind", "unavailable"}, 1},
		{ns + "store_operation_duration_seconds", []string{"method", "CreateClient"}, -2},
		{ns + "store_operation_duration_seconds", []string{"method", "RotateRefreshToken"}, 1},
		{ns + "store_operation_duration_seconds", []string{"method", "RevokeSession"}, 1},
	}
	for _, w := range want {
		got := value(after, w.name, w.labels...)
		if (w.value == -2 && got <= 0) || (w.value != -2 && got != w.value) {
			t.Errorf("after the session: %s%v = %v, want %v", w.name, w.labels, got, w.value)
		}
	}
	// No raw path becomes a label.
	for _, mm := range after[ns+"http_requests_total"].Metric {
		for _, l := range mm.Label {
			if l.GetName() == "endpoint" && strings.Contains(l.GetValue(), "/nope/") {
				t.Errorf("raw path as endpoint label: %q", l.GetValue())
			}
		}
	}
}
