package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/shared/paths"
)

// Attacks on upstream discovery and step-up by a hostile upstream, its authorization server or
// an MCP client (docs/upstream-discovery.md).

// codeHostRoute is an upstream_oauth2 route on the vendor route's host, with operator-chosen
// scopes at a provider of its own.
const codeHostRoute = `  - name: Code host
    from: https://remote.example.com/gh
    to: https://gh.internal/mcp
    policy: {allow: {and: [{authenticated_user: true}]}}
    mcp: {server: {upstream_oauth2: {client_id: gh-client, client_secret: gh-secret, scopes: [repo],
      endpoint: {auth_url: "https://gh.vendor.example/authorize", token_url: "https://gh.vendor.example/token"}}}}
`

// TestStepUp_ScopesGoOnlyToTheRouteTheResourceNames: the scopes of a step-up are what one
// upstream asked for; an authorization request whose resource does not name that route (the
// host's origin, covering every route) must not make the gateway ask another route's
// provider for them.
func TestStepUp_ScopesGoOnlyToTheRouteTheResourceNames(t *testing.T) {
	t.Parallel()
	e := newDiscoveryEnvWith(t, "{}", false, codeHostRoute)
	sid := e.session("alice")
	exp := e.clock.now().Add(time.Hour)
	for id, scope := range map[string]string{remoteRoute: "files:read files:write", "https://remote.example.com/gh": "repo"} {
		if err := e.svc.SaveToken(context.Background(), "alice", id, Token{AccessToken: "at-" + scope, RefreshToken: "rt", Expiry: exp, Scope: scope}); err != nil {
			t.Fatal(err)
		}
	}
	authorize := func(resource, scope string) *httptest.ResponseRecorder {
		return e.do("https://remote.example.com"+paths.Authorize+"?"+url.Values{"resource": {resource}, "scope": {scope}}.Encode(), sid)
	}
	// The vendor's step-up scope, asked with the host-level resource: the code host's
	// provider is not asked for it.
	for _, resource := range []string{"https://remote.example.com", ""} {
		rec := authorize(resource, "mcp files:write")
		if loc := rec.Header().Get("Location"); strings.HasPrefix(loc, "https://gh.vendor.example/") {
			t.Errorf("resource %q: the code host's provider is asked for another upstream's scopes: %s", resource, loc)
		}
	}
	// A step-up for the route the resource names still works.
	rec := authorize("https://remote.example.com/gh", "mcp admin:org")
	loc, _ := url.Parse(rec.Header().Get("Location"))
	if rec.Code != http.StatusSeeOther || loc == nil || loc.Host != "gh.vendor.example" || loc.Query().Get("scope") != "repo admin:org" {
		t.Errorf("step-up of the named route: %d %q, want the code host's provider asked for repo admin:org", rec.Code, rec.Header().Get("Location"))
	}
}

// TestStepUp_ScopeNotGrantedEndsOnAPage: an authorization server that does not grant the
// scope a step-up asked for must not send the browser round the authorization request and
// the upstream's authorization for ever: the callback says what was not granted.
func TestStepUp_ScopeNotGrantedEndsOnAPage(t *testing.T) {
	t.Parallel()
	e := newDiscoveryEnv(t, "{}", false)
	token := e.v.handlers["auth.vendor.example POST /token"]
	e.v.set("auth.vendor.example POST /token", func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		token(rec, r)
		var doc map[string]any
		if rec.Code == http.StatusOK && json.Unmarshal(rec.Body.Bytes(), &doc) == nil {
			doc["scope"] = "files:read offline_access" // never files:write
			b, _ := json.Marshal(doc)
			rec.Body = bytes.NewBuffer(b)
		}
		maps.Copy(w.Header(), rec.Header())
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	})
	sid := e.session("alice")
	if rec := e.connect(sid); rec.Code != http.StatusSeeOther {
		t.Fatalf("connect: %d %s", rec.Code, rec.Body.String())
	}
	next := "https://remote.example.com" + paths.Authorize + "?resource=" + url.QueryEscape(remoteRoute) + "&scope=mcp+files%3Awrite"
	for round := 0; round < 3; round++ {
		rec := e.do(next, sid)
		loc := rec.Header().Get("Location")
		if !strings.HasPrefix(loc, vendorIssuer+"/authorize?") {
			if round == 0 {
				t.Fatalf("step-up: %d %q, want the upstream authorization", rec.Code, loc)
			}
			return
		}
		resp, err := e.client.Get(loc)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		back := e.do(resp.Header.Get("Location"), sid)
		if back.Code != http.StatusSeeOther {
			body := back.Body.String()
			if back.Code != http.StatusForbidden || !strings.Contains(body, "files:write") || !strings.Contains(body, "Request ID") {
				t.Errorf("callback: %d, want a 403 page naming the scope not granted and the request ID: %s", back.Code, body)
			}
			return
		}
		next = "https://remote.example.com" + back.Header().Get("Location")
	}
	t.Error("the browser goes round the authorization request and the upstream's authorization again and again")
}

// TestDiscovery_CallbackKeepsTheAuthorizationServerItStartedWith: an upstream that names
// another authorization server while the user signs in (its metadata may be cached for one
// minute only) must not receive the code and PKCE verifier the first one issued.
func TestDiscovery_CallbackKeepsTheAuthorizationServerItStartedWith(t *testing.T) {
	t.Parallel()
	e := newDiscoveryEnv(t, "{}", false)
	e.v.setServerMetadata(func(m map[string]any) { delete(m, "authorization_response_iss_parameter_supported") })
	authorize := e.v.handlers["auth.vendor.example GET /authorize"]
	e.v.set("auth.vendor.example GET /authorize", func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		authorize(rec, r)
		loc, _ := url.Parse(rec.Header().Get("Location"))
		q := loc.Query()
		q.Del("iss") // a server without RFC 9207
		loc.RawQuery = q.Encode()
		http.Redirect(w, r, loc.String(), http.StatusFound)
	})
	prm := func(issuer string) http.HandlerFunc {
		return jsonHandler("no-store", map[string]any{"resource": vendorMCP, "authorization_servers": []string{issuer}})
	}
	e.v.set("mcp.vendor.example GET /.well-known/oauth-protected-resource/mcp", prm(vendorIssuer))
	sid := e.session("alice")
	rec := e.startConnect(sid)
	if rec.Code != http.StatusSeeOther {
		t.Fatalf("connect: %d %s", rec.Code, rec.Body.String())
	}
	resp, err := e.client.Get(rec.Header().Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// Meanwhile the upstream names another authorization server.
	const other = "https://auth2.vendor.example"
	e.v.set("mcp.vendor.example GET /.well-known/oauth-protected-resource/mcp", prm(other))
	e.v.set("auth2.vendor.example GET /.well-known/oauth-authorization-server", jsonHandler("", map[string]any{
		"issuer": other, "authorization_endpoint": other + "/authorize", "token_endpoint": other + "/token",
		"code_challenge_methods_supported": []string{"S256"}, "client_id_metadata_document_supported": true,
	}))
	e.v.set("auth2.vendor.example POST /token", jsonHandler("", map[string]any{"access_token": "from-auth2", "token_type": "Bearer"}))
	e.clock.add(2 * time.Minute)
	back := e.do(resp.Header.Get("Location"), sid)
	if n := e.v.hit("auth2.vendor.example POST /token"); n != 0 {
		t.Errorf("the code was sent to the authorization server named after the flow started (%d calls)", n)
	}
	if back.Code == http.StatusSeeOther {
		t.Errorf("callback: %d %q, want a failure page", back.Code, back.Header().Get("Location"))
	}
	if ok, _ := e.svc.Connected(context.Background(), "alice", remoteRoute); ok {
		t.Error("connected with a token from another authorization server")
	}
}

// TestDiscovery_RefreshTokenGoesOnlyToItsIssuer: an upstream that names another
// authorization server after the user connected must not receive, at that server's token
// endpoint, the refresh token the first one issued; the user connects again.
func TestDiscovery_RefreshTokenGoesOnlyToItsIssuer(t *testing.T) {
	t.Parallel()
	e := newDiscoveryEnv(t, "{}", false)
	if rec := e.connect(e.session("alice")); rec.Code != http.StatusSeeOther {
		t.Fatalf("connect: %d %s", rec.Code, rec.Body.String())
	}
	e.v.mu.Lock()
	issued := append([]string(nil), e.v.issued...)
	e.v.mu.Unlock()
	const other = "https://auth2.vendor.example"
	var got []url.Values
	e.v.set("mcp.vendor.example GET /.well-known/oauth-protected-resource/mcp", jsonHandler("", map[string]any{
		"resource": vendorMCP, "authorization_servers": []string{other}}))
	e.v.set("auth2.vendor.example GET /.well-known/oauth-authorization-server", jsonHandler("", map[string]any{
		"issuer": other, "authorization_endpoint": other + "/authorize", "token_endpoint": other + "/token",
		"code_challenge_methods_supported": []string{"S256"}, "client_id_metadata_document_supported": true,
	}))
	e.v.set("auth2.vendor.example POST /token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		e.v.mu.Lock()
		got = append(got, r.PostForm)
		e.v.mu.Unlock()
		jsonHandler("", map[string]any{"access_token": "from-auth2", "token_type": "Bearer", "expires_in": 3600})(w, r)
	})
	e.clock.add(time.Hour) // the TI and the cached metadata expired
	ti, _, err := e.svc.Token(context.Background(), "alice", remoteRoute)
	e.v.mu.Lock()
	defer e.v.mu.Unlock()
	for _, f := range got {
		for _, s := range issued {
			if f.Get("refresh_token") == s {
				t.Errorf("the refresh token of %s was sent to %s", vendorIssuer, other)
			}
		}
	}
	if err == nil || ti == "from-auth2" {
		t.Errorf("Token = %q, %v; want the user asked to connect again", ti, err)
	}
}

// TestDiscovery_PublicClientBesideOtherRoutesNeedsIss: every upstream route of a host shares
// one callback URL. A public client (client ID metadata document, or a dynamic registration
// without a secret) whose authorization server does not send RFC 9207 iss cannot tell its
// codes from another route's: another route's provider, handed such a code by a browser it
// redirected, would redeem it with the verifier the gateway sends it. Beside other upstream
// routes the gateway is a public client only at a server that sends iss.
func TestDiscovery_PublicClientBesideOtherRoutesNeedsIss(t *testing.T) {
	t.Parallel()
	docURL := "https://remote.example.com" + paths.UpstreamClientMetadata
	cases := []struct {
		name       string
		more       string // other routes of the host
		meta       func(m map[string]any)
		wantClient string // client_id of the authorization request; "" a registration failure
	}{
		{"document beside another route, no iss: confidential registration instead", codeHostRoute, func(m map[string]any) {
			m["client_id_metadata_document_supported"] = true
			delete(m, "authorization_response_iss_parameter_supported")
		}, "dyn-1"},
		{"only public registration beside another route, no iss: refused", codeHostRoute, func(m map[string]any) {
			m["token_endpoint_auth_methods_supported"] = []string{"none"}
			delete(m, "authorization_response_iss_parameter_supported")
		}, ""},
		{"document beside another route, with iss", codeHostRoute, func(m map[string]any) {
			m["client_id_metadata_document_supported"] = true
		}, docURL},
		{"document alone on the host, no iss", "", func(m map[string]any) {
			m["client_id_metadata_document_supported"] = true
			delete(m, "authorization_response_iss_parameter_supported")
		}, docURL},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newDiscoveryEnvWith(t, "{}", false, tc.more)
			e.v.setServerMetadata(tc.meta)
			rec := e.do("https://remote.example.com"+paths.Connect+"?route="+url.QueryEscape(remoteRoute)+"&redirect_url="+url.QueryEscape(appURL), e.session("alice"))
			if tc.wantClient == "" {
				if rec.Code != http.StatusBadGateway || !strings.Contains(rec.Body.String(), "did not register the gateway") || !strings.Contains(rec.Body.String(), "RFC 9207") {
					t.Fatalf("connect: %d %q, want the registration failure page: %s", rec.Code, rec.Header().Get("Location"), rec.Body.String())
				}
				return
			}
			loc, _ := url.Parse(rec.Header().Get("Location"))
			if rec.Code != http.StatusSeeOther || loc == nil || loc.Query().Get("client_id") != tc.wantClient {
				t.Fatalf("connect: %d %q, want an authorization request for client %s", rec.Code, rec.Header().Get("Location"), tc.wantClient)
			}
		})
	}
}

// TestDiscovery_HostileRegistrationEndpoint: a registration endpoint that is slow, huge,
// malformed, redirects or quotes what it was sent ends on the registration failure page,
// with the request ID and nothing it chose, and no registration is stored.
func TestDiscovery_HostileRegistrationEndpoint(t *testing.T) {
	t.Parallel()
	modes := map[string]http.HandlerFunc{
		"slow": func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(3 * time.Second):
			}
		},
		"slow body": func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{"client_id":"`))
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
			case <-time.After(3 * time.Second):
			}
		},
		"huge": func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{"client_id":"` + strings.Repeat("a", MaxResponseBytes) + `"}`))
		},
		"malformed": func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{"client_id": "x", <b>`))
		},
		"no client_id":          jsonHandler("", map[string]any{"client_secret": "s"}),
		"client_id with spaces": jsonHandler("", map[string]any{"client_id": "a b <i>x</i>"}),
		"redirect": func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "https://auth.vendor.example/elsewhere", http.StatusTemporaryRedirect)
		},
		"error text": func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":"<i>pwned</i>","error_description":"<i>pwned</i>"}`))
		},
	}
	for name, h := range modes {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newDiscoveryEnv(t, "{}", false)
			e.svc.callTimeout = 300 * time.Millisecond
			e.v.set("auth.vendor.example POST /register", h)
			rec := e.startConnect(e.session("alice"))
			body := rec.Body.String()
			if name == "slow" && !strings.Contains(body, "no complete answer within") {
				t.Errorf("a registration endpoint that does not answer is not given up on: %s", body)
			}
			if rec.Code != http.StatusBadGateway || !strings.Contains(body, "did not register the gateway") || !strings.Contains(body, "Request ID") {
				t.Errorf("connect: %d, want the registration failure page with the request ID: %s", rec.Code, body)
			}
			if strings.Contains(body, "<i>") || strings.Contains(body, "pwned") || strings.Contains(e.logs.String(), "pwned") {
				t.Error("the page or the logs show what the server chose")
			}
			if _, err := e.st.GetUpstreamClient(context.Background(), vendorIssuer, "https://remote.example.com"+paths.UpstreamCallback, e.clock.now()); err == nil {
				t.Error("a registration was stored")
			}
		})
	}
}

// TestDiscovery_RegisteredSecretStaysSecret: the client secret a dynamic registration
// returned goes only into the token endpoint's Authorization header: never into the
// authorization URL the browser sees, a page, a log line, or the store unsealed.
func TestDiscovery_RegisteredSecretStaysSecret(t *testing.T) {
	t.Parallel()
	e := newDiscoveryEnv(t, "{}", false)
	sid := e.session("alice")
	rec := e.startConnect(sid)
	loc := rec.Header().Get("Location")
	resp, err := e.client.Get(loc)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	back := e.do(resp.Header.Get("Location"), sid)
	e.clock.add(time.Hour)
	if _, _, err := e.svc.Token(context.Background(), "alice", remoteRoute); err != nil {
		t.Fatalf("refresh: %v", err)
	}
	e.v.mu.Lock()
	sec, forms := e.v.clientSecret, e.v.tokenForms
	e.v.mu.Unlock()
	if sec == "" || len(forms) < 2 {
		t.Fatalf("secret %q, %d token requests: the flow did not run", sec, len(forms))
	}
	rc, err := e.st.GetUpstreamClient(context.Background(), vendorIssuer, "https://remote.example.com"+paths.UpstreamCallback, e.clock.now())
	if err != nil {
		t.Fatal(err)
	}
	for what, s := range map[string]string{
		"the authorization URL": loc, "the callback answer": back.Body.String() + back.Header().Get("Location"),
		"the logs": e.logs.String(), "the stored registration": string(rc.Sealed),
	} {
		if strings.Contains(s, sec) {
			t.Errorf("the client secret is in %s", what)
		}
	}
	for _, f := range forms {
		if f.Has("client_secret") {
			t.Errorf("the client secret is in a token request body (registered for client_secret_basic): %v", f.Get("grant_type"))
		}
	}
}

// TestDiscovery_EachRouteKeepsItsOwnAuthorizationServer: two upstream_discovery routes of
// one host whose upstreams name different authorization servers: neither route's discovery
// or registration is used for the other.
func TestDiscovery_EachRouteKeepsItsOwnAuthorizationServer(t *testing.T) {
	t.Parallel()
	const other, route2 = "https://auth2.vendor.example", "https://remote.example.com/two"
	e := newDiscoveryEnvWith(t, "{}", false, `  - name: Second vendor
    from: `+route2+`
    to: https://mcp2.vendor.example/mcp
    policy: {allow: {and: [{authenticated_user: true}]}}
    mcp: {server: {upstream_discovery: {}}}
`)
	e.v.set("mcp2.vendor.example POST /mcp", challenge(`Bearer resource_metadata="https://mcp2.vendor.example/prm"`))
	e.v.set("mcp2.vendor.example GET /prm", jsonHandler("", map[string]any{
		"resource": "https://mcp2.vendor.example/mcp", "authorization_servers": []string{other}}))
	e.v.set("auth2.vendor.example GET /.well-known/oauth-authorization-server", jsonHandler("", map[string]any{
		"issuer": other, "authorization_endpoint": other + "/authorize", "token_endpoint": other + "/token",
		"registration_endpoint": other + "/register", "code_challenge_methods_supported": []string{"S256"},
		"authorization_response_iss_parameter_supported": true,
	}))
	e.v.set("auth2.vendor.example POST /register", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"client_id":"two-client","client_secret":"two-secret","token_endpoint_auth_method":"client_secret_basic"}`))
	})
	sid := e.session("alice")
	want := map[string][3]string{ // route: authorization endpoint, client, resource
		remoteRoute: {vendorIssuer + "/authorize", "dyn-1", vendorMCP},
		route2:      {other + "/authorize", "two-client", "https://mcp2.vendor.example/mcp"},
	}
	for _, rt := range []string{remoteRoute, route2, remoteRoute, route2} {
		rec := e.do("https://remote.example.com"+paths.Connect+"?route="+url.QueryEscape(rt)+"&redirect_url="+url.QueryEscape(appURL), sid)
		loc, err := url.Parse(rec.Header().Get("Location"))
		if rec.Code != http.StatusSeeOther || err != nil {
			t.Fatalf("%s: connect %d %s", rt, rec.Code, rec.Body.String())
		}
		w := want[rt]
		q := loc.Query()
		if got := loc.Scheme + "://" + loc.Host + loc.Path; got != w[0] || q.Get("client_id") != w[1] || q.Get("resource") != w[2] {
			t.Errorf("%s: authorization request %s client %q resource %q, want %v", rt, got, q.Get("client_id"), q.Get("resource"), w)
		}
	}
}

// TestDiscovery_ChallengeScopeCannotRewriteTheAuthorizationRequest: the scope of an
// upstream's challenge is asked of its own authorization server as scope tokens only: it
// cannot add parameters to the authorization URL, and a malformed one is dropped.
func TestDiscovery_ChallengeScopeCannotRewriteTheAuthorizationRequest(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ challenge, scope string }{
		{`Bearer resource_metadata="https://mcp.vendor.example/.well-known/oauth-protected-resource/mcp", scope="files:read&client_id=evil&redirect_uri=https://evil.example/#x"`,
			"files:read&client_id=evil&redirect_uri=https://evil.example/#x offline_access"},
		{"Bearer resource_metadata=\"https://mcp.vendor.example/.well-known/oauth-protected-resource/mcp\", scope=\"a\\\"b\"", "files:read files:write offline_access"},
	} {
		e := newDiscoveryEnv(t, "{}", false)
		e.v.set("mcp.vendor.example POST /mcp", challenge(tc.challenge))
		rec := e.startConnect(e.session("alice"))
		loc, err := url.Parse(rec.Header().Get("Location"))
		if rec.Code != http.StatusSeeOther || err != nil {
			t.Fatalf("connect: %d %s", rec.Code, rec.Body.String())
		}
		q := loc.Query()
		if len(q["client_id"]) != 1 || q.Get("client_id") != "dyn-1" || len(q["redirect_uri"]) != 1 ||
			q.Get("redirect_uri") != "https://remote.example.com"+paths.UpstreamCallback || loc.Fragment != "" || q.Get("scope") != tc.scope {
			t.Errorf("challenge %s: authorization request %v", tc.challenge, q)
		}
	}
}
