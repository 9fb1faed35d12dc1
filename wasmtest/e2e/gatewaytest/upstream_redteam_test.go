package gatewaytest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/shared/paths"
)

// TestUpstreamRedTeam_Connect attacks the connect flow through the local gateway: foreign and
// look-alike redirect_urls, a callback carrying another session's state (connect CSRF: the
// account that finishes the flow must be the one that started it), and a replayed callback.
func TestUpstreamRedTeam_Connect(t *testing.T) {
	s := startUpstreamStack(t, "header")
	alice := s.browser()
	te := s.appSignIn(t, alice)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	app, _ := url.Parse(s.AppURL)
	port := app.Port()
	foreign := []string{
		"http://evil.example.com/",
		"http://127.0.0.3.evil.example.com:" + port + "/",
		"http://127.0.0.30:" + port + "/",
		"http://127.0.0.3:1/",
		"https://127.0.0.3:" + port + "/",
		"http://evil.example.com/?u=" + s.AppURL,
		"http://127.0.0.3:" + port + "@evil.example.com/",
		"http://127.0.0.3:" + port + `\@evil.example.com/`,
		"//127.0.0.3:" + port + "/",
		"/relative",
		"javascript://127.0.0.3:" + port + "/%0aalert(1)",
		s.MCPOrigin + "/up",
		s.AuthURL + "/",
	}
	for _, path := range []string{paths.Connect, paths.Disconnect} {
		for _, r := range foreign {
			_, page, err := alice.Navigate(ctx, s.MCPOrigin+path+"?redirect_url="+url.QueryEscape(r), "http://never/")
			if err != nil || page == nil || page.StatusCode != http.StatusBadRequest || !strings.Contains(string(page.Body), "redirect_url") {
				t.Errorf("%s redirect_url=%q: %v %+v, want a 400 page", path, r, err, page)
			}
		}
	}

	// Bob starts a connect; his browser stops at the callback, holding his code and state.
	s.IDP.LoginAs(t, "bob")
	bob := s.browser()
	s.appSignIn(t, bob)
	s.IDP.LoginAs(t, "alice")
	cbPrefix := s.MCPOrigin + paths.UpstreamCallback
	cb, _, err := bob.Navigate(ctx, s.MCPOrigin+paths.Connect+"?redirect_url="+url.QueryEscape(s.AppURL+"/done"), cbPrefix)
	if err != nil || cb == nil || cb.Query().Get("state") == "" || cb.Query().Get("code") == "" {
		t.Fatalf("bob's flow did not reach the callback: %v %v\n%v", err, cb, bob.History())
	}
	// Alice is signed in on the MCP host too; her browser is made to open Bob's callback (a
	// link or an image on his page): refused, and nothing spent.
	if stop, _, err := alice.Navigate(ctx, s.MCPOrigin+paths.SignIn+"?return_to=/signed-in", s.MCPOrigin+"/signed-in"); err != nil || stop == nil {
		t.Fatalf("alice's sign-in on the MCP host: %v\n%v", err, alice.History())
	}
	_, page, err := alice.Navigate(ctx, cb.String(), s.AppURL)
	if err != nil || page == nil || page.StatusCode != http.StatusForbidden || !strings.Contains(string(page.Body), "another session") {
		t.Fatalf("alice with bob's callback: %v %+v", err, page)
	}
	if s.connected(t, te) || s.storedTI(t, "alice") != nil {
		t.Fatal("alice is connected to the upstream account of bob's flow")
	}
	// A browser without a session: refused too.
	_, page, _ = s.browser().Navigate(ctx, cb.String(), s.AppURL)
	if page == nil || page.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no session with bob's callback: %+v", page)
	}
	// Bob completes his own flow, once.
	stop, _, err := bob.Navigate(ctx, cb.String(), s.AppURL+"/done")
	if err != nil || stop == nil {
		t.Fatalf("bob's own callback: %v\n%v", err, bob.History())
	}
	if s.storedTI(t, "bob") == nil {
		t.Fatal("bob has no TI")
	}
	_, page, err = bob.Navigate(ctx, cb.String(), s.AppURL)
	if err != nil || page == nil || page.StatusCode != http.StatusBadRequest {
		t.Fatalf("replayed callback: %v %+v", err, page)
	}
	s.assertNoLeak(t, alice)
	s.assertNoLeak(t, bob)
}

// hostileProvider is an upstream OAuth server the test controls: /auth sends the browser
// straight back with a code, /token answers as mode says.
type hostileProvider struct {
	srv      *httptest.Server
	mode     atomic.Value // string
	secret   string
	redirect *httptest.Server
	hits     atomic.Int32 // requests that reached the redirect target
}

func newHostileProvider(t *testing.T, secret string) *hostileProvider {
	p := &hostileProvider{secret: secret}
	p.mode.Store("")
	p.redirect = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"access_token":"stolen-by-redirect","token_type":"bearer"}`)
	}))
	t.Cleanup(p.redirect.Close)
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/auth":
			q := r.URL.Query()
			http.Redirect(w, r, q.Get("redirect_uri")+"?code=c0de&state="+url.QueryEscape(q.Get("state")), http.StatusFound)
		case "/token":
			p.token(w, r)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *hostileProvider) token(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	switch p.mode.Load().(string) {
	case "slow":
		select {
		case <-r.Context().Done():
		case <-time.After(15 * time.Second):
		}
	case "huge":
		fmt.Fprint(w, `{"access_token":"`+strings.Repeat("A", 200<<10)+`"}`)
	case "malformed":
		fmt.Fprint(w, `{"access_token":`+p.secret)
	case "error quoting the secret":
		w.WriteHeader(400)
		fmt.Fprintf(w, `{"error":"invalid_request","error_description":"wrong secret %s"}`, p.secret)
	case "secret as the error code":
		w.WriteHeader(400)
		fmt.Fprintf(w, `{"error":%q}`, p.secret)
	case "redirect":
		http.Redirect(w, r, p.redirect.URL+"/token", http.StatusTemporaryRedirect)
	case "no access_token":
		fmt.Fprint(w, `{"token_type":"bearer","refresh_token":"rt"}`)
	case "invalid_grant":
		w.WriteHeader(400)
		fmt.Fprint(w, `{"error":"invalid_grant"}`)
	}
}

// TestUpstreamRedTeam_HostileTokenEndpoint connects through the local gateway against a
// token endpoint that is slow, huge, malformed, quotes the client secret, redirects, or
// refuses: each ends on an error page naming the problem without the secret, the user stays
// not connected (401 invalid_token at the route), and the redirect target gets nothing.
func TestUpstreamRedTeam_HostileTokenEndpoint(t *testing.T) {
	hp := newHostileProvider(t, "")
	h := startUpstreamStackAt(t, "params", "client_secret_post", hp.srv.URL)
	hp.secret = h.UpClient.ClientSecret
	b := h.browser()
	te := h.appSignIn(t, b)
	for _, tc := range []struct{ mode, want string }{
		{"slow", "within 10s"},
		{"huge", "larger than 64 KiB"},
		{"malformed", "not a JSON object"},
		{"error quoting the secret", "invalid_request"},
		{"secret as the error code", "unregistered"},
		{"redirect", "redirects are not followed"},
		{"no access_token", "access_token is missing"},
		{"invalid_grant", "invalid_grant"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			hp.mode.Store(tc.mode)
			ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
			defer cancel()
			back := h.AppURL + "/connected"
			stop, page, err := b.Navigate(ctx, h.MCPOrigin+paths.Connect+"?redirect_url="+url.QueryEscape(back), back)
			if err != nil || stop != nil || page == nil || page.StatusCode != http.StatusBadGateway || !strings.Contains(string(page.Body), tc.want) {
				body := ""
				if page != nil {
					body = string(page.Body)
				}
				t.Fatalf("%v stop=%v page %d %s", err, stop, func() int {
					if page == nil {
						return 0
					}
					return page.StatusCode
				}(), body)
			}
			if strings.Contains(string(page.Body), hp.secret) {
				t.Fatal("the error page shows the client secret")
			}
			if h.connected(t, te) {
				t.Fatal("connected")
			}
			h.wantInvalidToken(t, te, tc.mode)
			if hp.hits.Load() != 0 {
				t.Fatal("the token request followed the redirect")
			}
		})
	}
	logs := h.logs.String()
	for _, leak := range []string{hp.secret, "stolen-by-redirect"} {
		if strings.Contains(logs, leak) {
			t.Errorf("%.20s… appears in the logs", leak)
		}
	}
}
