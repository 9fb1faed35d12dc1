package server

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/shared/checkapi"
	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/tokensvc/secret"
	"github.com/mcpmesh/gateway/tokensvc/store/memory"
)

// Red-team tests of the check API boundary: it hands out Internal Tokens and assertions, so
// nothing but the filter, with its key, on the internal listener, may obtain an answer.

func TestCheck_RedTeamPublicListenerNeverServesTheCheckAPI(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	tok := e.token(e.session("alice"), "", time.Hour)
	body := `{"route_id":"` + demoRoute + `","host":"mcp.example.com","token":"` + tok + `"}`
	for _, host := range []string{"mcp.example.com", "app.example.com", "auth.example.com", "tokensvc.internal", "gateway-tokensvc"} {
		for _, path := range []string{paths.Check, paths.Check + "/", "/.internal/../.internal/check", "/%2einternal/check", "/.gateway/../.internal/check"} {
			r := httptest.NewRequest(http.MethodPost, "http://"+host+"/", strings.NewReader(body))
			r.URL.Path, r.URL.RawPath, r.RequestURI = path, "", path
			r.Header.Set(checkapi.KeyHeader, e.cfg.FilterKey())
			rec := httptest.NewRecorder()
			e.srv.PublicHandler().ServeHTTP(rec, r)
			if rec.Code == http.StatusOK || strings.Contains(rec.Body.String(), `"assertion"`) || strings.Contains(rec.Body.String(), `"status":"ok"`) {
				t.Errorf("public %s%s: status %d body %s", host, path, rec.Code, rec.Body.String())
			}
		}
	}
}

func TestCheck_RedTeamKeyOnlyInItsHeaderAndOnlyTheFirstValue(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	tok := e.token(e.session("alice"), "", time.Hour)
	body := `{"route_id":"` + demoRoute + `","host":"mcp.example.com","token":"` + tok + `"}`
	key := e.cfg.FilterKey()
	cases := map[string]func(r *http.Request){
		"wrong value first":   func(r *http.Request) { r.Header[http.CanonicalHeaderKey(checkapi.KeyHeader)] = []string{"wrong", key} },
		"key in the query":    func(r *http.Request) { r.URL.RawQuery = checkapi.KeyHeader + "=" + key },
		"key as bearer token": func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+key) },
		"key in a cookie":     func(r *http.Request) { r.Header.Set("Cookie", checkapi.KeyHeader+"="+key) },
		"key with a suffix":   func(r *http.Request) { r.Header.Set(checkapi.KeyHeader, key+"x") },
		"lower-cased key":     func(r *http.Request) { r.Header.Set(checkapi.KeyHeader, strings.ToLower(key)) },
	}
	for name, mod := range cases {
		r := httptest.NewRequest(http.MethodPost, paths.Check, strings.NewReader(body))
		mod(r)
		rec := httptest.NewRecorder()
		e.srv.InternalHandler().ServeHTTP(rec, r)
		if strings.ToLower(key) == key && name == "lower-cased key" {
			continue
		}
		if rec.Code != http.StatusUnauthorized || rec.Body.Len() != 0 {
			t.Errorf("%s: status %d body %q, want 401 and nothing else", name, rec.Code, rec.Body.String())
		}
	}
}

// TestCheck_RedTeamAnswersAndLogsNeverCarryThePresentedCredential: the token service echoes
// neither the bearer token nor the cookie it was asked about, in any answer or log line.
func TestCheck_RedTeamAnswersAndLogsNeverCarryThePresentedCredential(t *testing.T) {
	t.Parallel()
	cfg, err := config.Parse([]byte(testConfigYAML), nil)
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	st := memory.New()
	clock := &testClock{t: time.Unix(1_700_000_000, 0)}
	srv, err := New(context.Background(), cfg, WithStore(st), WithConnector(newIDP()), WithClock(clock.now),
		WithLogger(slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	e := &testEnv{t: t, cfg: cfg, store: st, clock: clock, srv: srv}
	alice := e.session("alice")
	valid := e.token(alice, "", time.Hour)
	otherResource := e.token(alice, otherRoute, time.Hour)
	cookie := e.cookie(alice, "app.example.com")
	unknown := secret.NewToken()
	reqs := []checkapi.Request{
		{RouteID: demoRoute, Host: "mcp.example.com", Token: valid},
		{RouteID: demoRoute, Host: "mcp.example.com", Token: otherResource},
		{RouteID: demoRoute, Host: "mcp.example.com", Token: unknown},
		{RouteID: demoRoute, Host: "app.example.com", Token: valid},
		{RouteID: demoRoute, Host: "mcp.example.com", Cookie: cookie},
		{RouteID: appRoute, Host: "app.example.com", Cookie: cookie},
		{RouteID: appRoute, Host: "app.example.com", Cookie: unknown},
		{RouteID: "https://nope.example.com", Host: "nope.example.com", Token: valid},
	}
	secrets := []string{valid, otherResource, cookie, unknown}
	for _, req := range reqs {
		_, resp := e.check(req)
		var answer strings.Builder
		answer.WriteString(resp.Assertion + resp.ClientToken + resp.ErrorDescription + resp.UpstreamToken)
		for _, s := range secrets {
			if strings.Contains(answer.String(), s) {
				t.Errorf("answer to %+v carries a presented credential", req)
			}
		}
	}
	all, _ := io.ReadAll(&logs)
	for _, s := range secrets {
		if bytes.Contains(all, []byte(s)) {
			t.Errorf("the log carries a presented credential:\n%s", all)
		}
	}
}
