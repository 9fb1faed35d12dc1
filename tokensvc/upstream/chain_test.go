package upstream

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/mcpmesh/gateway/shared/paths"
)

// A host with two upstream routes: one connect runs both flows, one after the other, and
// returns to the application once; a route the user already has is skipped.
func TestConnect_ChainsEveryRouteTheUserNeeds(t *testing.T) {
	t.Parallel()
	const second = "https://up.example.com/second"
	e := newEnvWith(t, "header", nil, `
  - name: Second
    from: `+second+`
    to: http://second.internal/mcp
    policy: {allow: {and: [{authenticated_user: true}]}}
    mcp:
      server:
        upstream_oauth2:
          client_id: gw-client
          client_secret: {secret}
          endpoint: {auth_url: "{provider}/authorize", token_url: "{provider}/token", auth_style: header}
`)
	sid := e.session("alice", "alice@example.com")
	connectURL := "https://up.example.com" + paths.Connect + "?redirect_url=" + url.QueryEscape(appURL)
	rec := e.do("GET", connectURL, sid, nil, nil)
	// First flow.
	rec = e.do("GET", e.authorize(rec.Header().Get("Location")), sid, nil, nil)
	if rec.Code != http.StatusSeeOther || !strings.HasPrefix(rec.Header().Get("Location"), e.p.srv.URL+"/authorize?") {
		t.Fatalf("after the first flow: %d %q, want the second flow", rec.Code, rec.Header().Get("Location"))
	}
	// Second flow, then back to the application.
	rec = e.do("GET", e.authorize(rec.Header().Get("Location")), sid, nil, nil)
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != appURL {
		t.Fatalf("after the second flow: %d %q", rec.Code, rec.Header().Get("Location"))
	}
	for _, id := range []string{routeID, second} {
		if ok, _ := e.svc.Connected(context.Background(), "alice", id); !ok {
			t.Errorf("%s not connected", id)
		}
	}
	// Disconnect one route; the next connect runs only its flow.
	if err := e.svc.DisconnectRoute(context.Background(), "alice", second); err != nil {
		t.Fatal(err)
	}
	rec = e.do("GET", connectURL, sid, nil, nil)
	u, _ := url.Parse(rec.Header().Get("Location"))
	if u == nil || !strings.HasPrefix(u.String(), e.p.srv.URL+"/authorize?") {
		t.Fatalf("reconnect: %d %q", rec.Code, rec.Header().Get("Location"))
	}
	rec = e.do("GET", e.authorize(u.String()), sid, nil, nil)
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != appURL {
		t.Fatalf("one flow, then back: %d %q", rec.Code, rec.Header().Get("Location"))
	}
	// Everything connected: straight back, no flow.
	if rec = e.do("GET", connectURL, sid, nil, nil); rec.Header().Get("Location") != appURL {
		t.Errorf("connected user: %q, want straight back", rec.Header().Get("Location"))
	}
}
