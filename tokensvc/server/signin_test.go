package server

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/shared/checkapi"
	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/tokensvc/store/memory"
)

// TestPublic_BrowserSignInThenCheckWithCookie runs the browser sign-in through the public
// handler and then asks the check API about the cookie it set.
func TestPublic_BrowserSignInThenCheckWithCookie(t *testing.T) {
	t.Parallel()
	cfg, err := config.Parse([]byte(testConfigYAML), nil)
	if err != nil {
		t.Fatal(err)
	}
	clock := &testClock{t: time.Unix(1_700_000_000, 0)}
	provider := newIDP()
	provider.SignInAs = "alice" // everyone who reaches the provider signs in as alice, whatever the code
	srv, err := New(context.Background(), cfg, WithStore(memory.New()), WithConnector(provider), WithClock(clock.now), WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	jar, _ := cookiejar.New(nil)
	next := "https://app.example.com" + paths.SignIn + "?return_to=" + url.QueryEscape("/home")
	for range 10 {
		if strings.HasPrefix(next, "https://idp.example.com/") {
			u, _ := url.Parse(next)
			next = "https://auth.example.com" + paths.IDPCallback + "?code=c&state=" + url.QueryEscape(u.Query().Get("state"))
		}
		r := httptest.NewRequest(http.MethodGet, next, nil)
		for _, c := range jar.Cookies(r.URL) {
			r.AddCookie(c)
		}
		rec := httptest.NewRecorder()
		srv.PublicHandler().ServeHTTP(rec, r)
		jar.SetCookies(r.URL, rec.Result().Cookies())
		if rec.Code != http.StatusSeeOther {
			t.Fatalf("%s: status %d %s", next, rec.Code, rec.Body.String())
		}
		loc, _ := r.URL.Parse(rec.Header().Get("Location"))
		next = loc.String()
		if next == "https://app.example.com/home" {
			break
		}
	}
	if next != "https://app.example.com/home" {
		t.Fatalf("sign-in ended at %s", next)
	}
	var cookie string
	u, _ := url.Parse("https://app.example.com/")
	for _, c := range jar.Cookies(u) {
		if c.Name == checkapi.SessionCookie {
			cookie = c.Value
		}
	}
	e := &testEnv{t: t, cfg: cfg, clock: clock, srv: srv}
	status, resp := e.check(checkapi.Request{RouteID: appRoute, Host: "app.example.com", Cookie: cookie})
	if status != 200 || resp.Identity.Email != "alice@example.com" || resp.ClientToken == "" {
		t.Fatalf("check with the browser cookie: %d %+v", status, resp)
	}
}
