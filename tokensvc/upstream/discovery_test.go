package upstream

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/shared/paths"
)

func TestDiscovery_ConnectRegistersOnceAndBindsTheResource(t *testing.T) {
	t.Parallel()
	e := newDiscoveryEnv(t, "{}", false)
	for _, user := range []string{"alice", "bob"} {
		rec := e.connect(e.session(user))
		if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != appURL {
			t.Fatalf("%s: callback answered %d %q: %s", user, rec.Code, rec.Header().Get("Location"), rec.Body.String())
		}
	}
	e.v.mu.Lock()
	registered, authz, forms := e.v.registered, e.v.authorizeReqs, e.v.tokenForms
	e.v.mu.Unlock()
	if registered != 1 {
		t.Errorf("registered %d times, want once for both users", registered)
	}
	for _, q := range authz {
		if q.Get("client_id") != "dyn-1" || q.Get("resource") != vendorMCP || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" {
			t.Errorf("authorization request %v: want client dyn-1, resource %s, PKCE S256", q, vendorMCP)
		}
		if q.Get("scope") != "files:read offline_access" {
			t.Errorf("scope %q, want the challenge's scope and offline_access", q.Get("scope"))
		}
		if q.Get("redirect_uri") != "https://remote.example.com"+paths.UpstreamCallback {
			t.Errorf("redirect_uri %q", q.Get("redirect_uri"))
		}
	}
	for _, f := range forms {
		if f.Get("resource") != vendorMCP {
			t.Errorf("token request without resource: %v", f)
		}
	}
	ti, _, err := e.svc.Token(context.Background(), "alice", remoteRoute)
	if err != nil || !strings.HasPrefix(ti, "vendor-at-") {
		t.Fatalf("alice's TI %q, %v", ti, err)
	}
	// The TI is refreshed like an upstream_oauth2 route's, resource included.
	e.clock.add(time.Hour)
	ti2, _, err := e.svc.Token(context.Background(), "alice", remoteRoute)
	if err != nil || ti2 == ti || !strings.HasPrefix(ti2, "vendor-at-") {
		t.Fatalf("after expiry: TI %q, %v; want a refreshed one", ti2, err)
	}
	e.v.mu.Lock()
	last := e.v.tokenForms[len(e.v.tokenForms)-1]
	e.v.mu.Unlock()
	if last.Get("grant_type") != "refresh_token" || last.Get("resource") != vendorMCP {
		t.Errorf("refresh request %v: want grant_type refresh_token with the resource", last)
	}
	// Discovery ran once for the whole test (the documents allow 10 minutes; the clock moved
	// an hour, so the refresh discovered again).
	if n := e.v.hit("mcp.vendor.example POST /mcp"); n != 2 {
		t.Errorf("probed %d times, want 2 (once, then after the cache expired)", n)
	}
	for _, s := range e.v.issued {
		if strings.Contains(e.logs.String(), s) {
			t.Errorf("a token appears in the logs")
		}
	}
}

func TestDiscovery_ClientIDMetadataDocumentBeforeDynamicRegistration(t *testing.T) {
	t.Parallel()
	e := newDiscoveryEnv(t, "{}", false)
	e.v.setServerMetadata(func(m map[string]any) { m["client_id_metadata_document_supported"] = true })
	e.v.mu.Lock()
	e.v.clientSecret = "" // a public client: no Basic authentication expected
	e.v.mu.Unlock()
	if rec := e.connect(e.session("alice")); rec.Code != http.StatusSeeOther {
		t.Fatalf("callback: %d %s", rec.Code, rec.Body.String())
	}
	docURL := "https://remote.example.com" + paths.UpstreamClientMetadata
	e.v.mu.Lock()
	registered, q := e.v.registered, e.v.authorizeReqs[0]
	e.v.mu.Unlock()
	if registered != 0 || q.Get("client_id") != docURL {
		t.Fatalf("registered %d times, client_id %q; want the document URL and no registration", registered, q.Get("client_id"))
	}
	rec := e.do(docURL, "")
	var doc map[string]any
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &doc) != nil {
		t.Fatalf("document: %d %s", rec.Code, rec.Body.String())
	}
	if doc["client_id"] != docURL || !slices.Equal(toStrings(doc["redirect_uris"]), []string{"https://remote.example.com" + paths.UpstreamCallback}) ||
		doc["token_endpoint_auth_method"] != "none" {
		t.Errorf("document %v", doc)
	}
	if rec := e.do("https://app.example.com"+paths.UpstreamClientMetadata, ""); rec.Code != http.StatusNotFound {
		t.Errorf("a host without upstream_discovery routes serves the document: %d", rec.Code)
	}
}

func TestDiscovery_PreRegisteredClientFirst(t *testing.T) {
	t.Parallel()
	e := newDiscoveryEnv(t, "{client_id: operator-client, client_secret: operator-secret, scopes: [files:write]}", false)
	e.v.setServerMetadata(func(m map[string]any) { m["client_id_metadata_document_supported"] = true })
	e.v.mu.Lock()
	e.v.clientSecret = "operator-secret"
	e.v.mu.Unlock()
	if rec := e.connect(e.session("alice")); rec.Code != http.StatusSeeOther {
		t.Fatalf("callback: %d %s", rec.Code, rec.Body.String())
	}
	e.v.mu.Lock()
	defer e.v.mu.Unlock()
	if q := e.v.authorizeReqs[0]; q.Get("client_id") != "operator-client" || q.Get("scope") != "files:write offline_access" || e.v.registered != 0 {
		t.Errorf("authorization request %v, %d registrations: want the configured client and scopes", q, e.v.registered)
	}
}

// TestDiscovery_PinnedIssuer: with upstream_discovery.issuer, a pre-registered client is used
// at that authorization server only; an upstream naming another one (even on an allowed
// domain) fails on the connect page, and that server is never contacted — the operator's
// client secret cannot be sent to a server the upstream chose.
func TestDiscovery_PinnedIssuer(t *testing.T) {
	t.Parallel()
	block := "{client_id: operator-client, client_secret: operator-secret, issuer: \"" + vendorIssuer + "\"}"
	e := newDiscoveryEnv(t, block, false)
	e.v.mu.Lock()
	e.v.clientSecret = "operator-secret"
	e.v.mu.Unlock()
	if rec := e.connect(e.session("alice")); rec.Code != http.StatusSeeOther {
		t.Fatalf("pinned to the issuer the upstream names: callback %d %s", rec.Code, rec.Body.String())
	}

	moved := newDiscoveryEnv(t, "{client_id: operator-client, client_secret: operator-secret, issuer: \"https://login.vendor.example\"}", false)
	rec := moved.startConnect(moved.session("alice"))
	if rec.Code != http.StatusBadGateway || !strings.Contains(rec.Body.String(), "upstream_discovery.issuer pins") {
		t.Fatalf("upstream names another authorization server than the pinned one: %d %s", rec.Code, rec.Body.String())
	}
	for _, k := range []string{"auth.vendor.example GET /.well-known/oauth-authorization-server", "auth.vendor.example GET /.well-known/openid-configuration", "auth.vendor.example POST /token"} {
		if n := moved.v.hit(k); n != 0 {
			t.Errorf("%s contacted %d times; the unpinned authorization server must not be", k, n)
		}
	}
}

func TestDiscovery_WellKnownFallbackPathFirstThenRoot(t *testing.T) {
	t.Parallel()
	e := newDiscoveryEnv(t, "{}", false)
	e.v.set("mcp.vendor.example POST /mcp", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="vendor"`)
		w.WriteHeader(http.StatusUnauthorized)
	})
	prm := e.v.handlers["mcp.vendor.example GET /.well-known/oauth-protected-resource/mcp"]
	e.v.set("mcp.vendor.example GET /.well-known/oauth-protected-resource/mcp", nil)
	e.v.set("mcp.vendor.example GET /.well-known/oauth-protected-resource", prm)
	if rec := e.connect(e.session("alice")); rec.Code != http.StatusSeeOther {
		t.Fatalf("callback: %d %s", rec.Code, rec.Body.String())
	}
	if e.v.hit("mcp.vendor.example GET /.well-known/oauth-protected-resource/mcp") != 1 {
		t.Error("the path-aware URL was not tried first")
	}
}

func TestDiscovery_OpenIDFallbackForIssuerWithPath(t *testing.T) {
	t.Parallel()
	got := serverMetadataURLs("https://auth.vendor.example/tenant/1")
	want := []string{
		"https://auth.vendor.example/.well-known/oauth-authorization-server/tenant/1",
		"https://auth.vendor.example/.well-known/openid-configuration/tenant/1",
		"https://auth.vendor.example/tenant/1/.well-known/openid-configuration",
	}
	if !slices.Equal(got, want) {
		t.Errorf("serverMetadataURLs = %q, want %q", got, want)
	}
	if got := serverMetadataURLs("https://auth.vendor.example/"); !slices.Equal(got, []string{
		"https://auth.vendor.example/.well-known/oauth-authorization-server", "https://auth.vendor.example/.well-known/openid-configuration"}) {
		t.Errorf("without a path: %q", got)
	}
}

// TestDiscovery_FailuresSayWhich drives the connect page through hostile and broken
// upstreams: each failure is a 502 page naming what went wrong, with the request ID, and
// nothing is sent to the authorization server.
func TestDiscovery_FailuresSayWhich(t *testing.T) {
	t.Parallel()
	big := strings.Repeat(" ", MaxResponseBytes+10)
	cases := []struct {
		name    string
		guarded bool
		setup   func(v *vendor)
		want    string // in the page
	}{
		{"challenge points at a domain not allowed", false, func(v *vendor) {
			v.set("mcp.vendor.example POST /mcp", challenge(`Bearer resource_metadata="https://metadata.evil.example/prm"`))
		}, "has not allowed"},
		{"challenge points at a private address", true, func(v *vendor) {
			v.set("mcp.vendor.example POST /mcp", challenge(`Bearer resource_metadata="https://db.private.vendor.example/prm"`))
		}, "private network address"},
		{"authorization server at the cloud metadata address", true, func(v *vendor) {
			v.set("mcp.vendor.example GET /.well-known/oauth-protected-resource/mcp", jsonHandler("", map[string]any{
				"resource": vendorMCP, "authorization_servers": []string{"https://metadata.vendor.example"}}))
		}, "private network address"},
		{"guarded discovery of a public upstream works", true, nil, ""},
		{"metadata names another resource", false, func(v *vendor) {
			v.set("mcp.vendor.example GET /.well-known/oauth-protected-resource/mcp", jsonHandler("", map[string]any{
				"resource": "https://mcp.vendor.example/other", "authorization_servers": []string{vendorIssuer}}))
		}, "is not the upstream"},
		{"authorization server on a domain not allowed", false, func(v *vendor) {
			v.set("mcp.vendor.example GET /.well-known/oauth-protected-resource/mcp", jsonHandler("", map[string]any{
				"resource": vendorMCP, "authorization_servers": []string{"https://login.evil.example"}}))
		}, "has not allowed"},
		{"authorization server redirects", false, func(v *vendor) {
			redirectTo := func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "https://auth.vendor.example/elsewhere", http.StatusFound)
			}
			v.set("auth.vendor.example GET /.well-known/oauth-authorization-server", redirectTo)
			v.set("auth.vendor.example GET /.well-known/openid-configuration", redirectTo)
		}, "redirect"},
		{"huge metadata", false, func(v *vendor) {
			v.set("mcp.vendor.example GET /.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{"resource":"` + vendorMCP + `"` + big + `}`))
			})
		}, "larger than"},
		{"slow metadata", false, func(v *vendor) {
			v.set("mcp.vendor.example GET /.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
				select {
				case <-time.After(3 * time.Second):
				case <-r.Context().Done():
				}
			})
		}, "could not be fetched"},
		{"no metadata anywhere", false, func(v *vendor) {
			v.set("mcp.vendor.example POST /mcp", challenge(`Bearer realm="x"`))
			v.set("mcp.vendor.example GET /.well-known/oauth-protected-resource/mcp", nil)
		}, "does not publish"},
		{"malformed metadata", false, func(v *vendor) {
			v.set("mcp.vendor.example GET /.well-known/oauth-protected-resource/mcp", jsonHandler("", []int{1}))
		}, "not usable"},
		{"issuer mismatch", false, func(v *vendor) {
			v.setServerMetadata(func(m map[string]any) { m["issuer"] = "https://other.vendor.example" })
		}, "is not the authorization server the resource names"},
		{"no PKCE S256", false, func(v *vendor) {
			v.setServerMetadata(func(m map[string]any) { m["code_challenge_methods_supported"] = []string{"plain"} })
		}, "S256"},
		{"token endpoint on a domain not allowed", false, func(v *vendor) {
			v.setServerMetadata(func(m map[string]any) { m["token_endpoint"] = "https://tokens.evil.example/token" })
		}, "has not allowed"},
		{"registration refused", false, func(v *vendor) {
			v.set("auth.vendor.example POST /register", func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusBadRequest)
				_, _ = w.Write([]byte(`{"error":"invalid_redirect_uri","error_description":"<script>"}`))
			})
		}, "did not register the gateway"},
		{"no way to register", false, func(v *vendor) {
			v.setServerMetadata(func(m map[string]any) { delete(m, "registration_endpoint") })
		}, "neither client ID metadata documents nor dynamic registration"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newDiscoveryEnv(t, "{}", tc.guarded)
			e.svc.disc.timeout = 500 * time.Millisecond
			if tc.setup != nil {
				tc.setup(e.v)
			}
			rec := e.startConnect(e.session("alice"))
			body := rec.Body.String()
			if tc.want == "" {
				if rec.Code != http.StatusSeeOther || !strings.HasPrefix(rec.Header().Get("Location"), vendorIssuer+"/authorize?") {
					t.Fatalf("connect answered %d %q, want the upstream authorization", rec.Code, rec.Header().Get("Location"))
				}
				return
			}
			if rec.Code != http.StatusBadGateway || !strings.Contains(body, tc.want) {
				t.Fatalf("connect answered %d, want 502 saying %q: %s", rec.Code, tc.want, body)
			}
			if id := rec.Result().Header.Get("X-Request-Id"); !strings.Contains(body, "Request ID") {
				t.Errorf("the page shows no request ID (%q)", id)
			}
			if strings.Contains(body, "<script>") {
				t.Error("the page shows text the upstream chose")
			}
			e.v.mu.Lock()
			n := len(e.v.authorizeReqs) + len(e.v.tokenForms)
			e.v.mu.Unlock()
			if n != 0 {
				t.Error("the authorization server was used after a failed discovery")
			}
		})
	}
}

func TestDiscovery_TokenEndpointGoneDiscoversAgain(t *testing.T) {
	t.Parallel()
	e := newDiscoveryEnv(t, "{}", false)
	if rec := e.connect(e.session("alice")); rec.Code != http.StatusSeeOther {
		t.Fatalf("callback: %d", rec.Code)
	}
	probes := e.v.hit("mcp.vendor.example POST /mcp")
	tokenH := e.v.handlers["auth.vendor.example POST /token"]
	e.v.set("auth.vendor.example POST /token", nil) // 404: the server moved its endpoint
	e.v.setServerMetadata(func(m map[string]any) { m["token_endpoint"] = vendorIssuer + "/v2/token" })
	e.v.set("auth.vendor.example POST /v2/token", tokenH)
	e.clock.add(59 * time.Minute) // due for refresh, metadata still cached
	if _, _, err := e.svc.Token(context.Background(), "alice", remoteRoute); err != nil {
		t.Logf("refresh at the old endpoint failed as expected: %v", err)
	}
	e.clock.add(30 * time.Second)
	deadline := time.Now().Add(5 * time.Second)
	for e.v.hit("auth.vendor.example POST /v2/token") == 0 && time.Now().Before(deadline) {
		_, _, _ = e.svc.Token(context.Background(), "alice", remoteRoute)
		time.Sleep(50 * time.Millisecond)
	}
	if e.v.hit("auth.vendor.example POST /v2/token") == 0 {
		t.Fatal("the refresh never reached the new token endpoint")
	}
	if e.v.hit("mcp.vendor.example POST /mcp") <= probes {
		t.Error("the upstream was not probed again after its token endpoint disappeared")
	}
}

func challenge(v string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", v)
		w.WriteHeader(http.StatusUnauthorized)
	}
}

func toStrings(v any) []string {
	l, _ := v.([]any)
	out := make([]string, 0, len(l))
	for _, x := range l {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

// TestDiscovery_StepUpConnectsAgainForMissingScopes: an MCP client that met an upstream's
// insufficient_scope challenge asks the gateway for those scopes; the authorization flow
// connects the route again, asking for them too, and only then issues a code.
func TestDiscovery_StepUpConnectsAgainForMissingScopes(t *testing.T) {
	t.Parallel()
	e := newDiscoveryEnv(t, "{}", false)
	sid := e.session("alice")
	if rec := e.connect(sid); rec.Code != http.StatusSeeOther {
		t.Fatalf("callback: %d", rec.Code)
	}
	authorize := "https://remote.example.com" + paths.Authorize + "?resource=" + url.QueryEscape(remoteRoute)
	if rec := e.do(authorize+"&scope=mcp+files%3Aread", sid); rec.Body.String() != "code issued" {
		t.Fatalf("scopes already granted: %d %s, want a code at once", rec.Code, rec.Body.String())
	}
	rec := e.do(authorize+"&scope=mcp+files%3Awrite", sid)
	if rec.Code != http.StatusSeeOther || !strings.HasPrefix(rec.Header().Get("Location"), vendorIssuer+"/authorize?") {
		t.Fatalf("step-up: %d %q, want the upstream authorization", rec.Code, rec.Header().Get("Location"))
	}
	resp, err := e.client.Get(rec.Header().Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	e.v.mu.Lock()
	q := e.v.authorizeReqs[len(e.v.authorizeReqs)-1]
	e.v.mu.Unlock()
	if q.Get("scope") != "files:read offline_access files:write" {
		t.Errorf("step-up scope %q, want the route's scopes and files:write", q.Get("scope"))
	}
	back := e.do(resp.Header.Get("Location"), sid)
	if back.Code != http.StatusSeeOther || !strings.HasPrefix(back.Header().Get("Location"), paths.Authorize+"?") {
		t.Fatalf("callback: %d %q, want back to the authorization request", back.Code, back.Header().Get("Location"))
	}
	if rec := e.do("https://remote.example.com"+back.Header().Get("Location"), sid); rec.Body.String() != "code issued" {
		t.Fatalf("after the step-up: %d %s, want a code", rec.Code, rec.Body.String())
	}
}

// TestDiscovery_ReplicasShareOneRegistration: replicas that register at once keep one
// registration, and all of them use it.
func TestDiscovery_ReplicasShareOneRegistration(t *testing.T) {
	t.Parallel()
	e := newDiscoveryEnv(t, "{}", false)
	const n = 4
	ids := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		svc := e.replica()
		rt, _ := svc.Route(remoteRoute)
		wg.Add(1)
		go func() {
			defer wg.Done()
			as, err := svc.upstreamAS(context.Background(), rt)
			if err == nil {
				ids[i] = as.clientID
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil || ids[i] != ids[0] {
			t.Fatalf("replica %d: client %q, %v; want all on %q", i, ids[i], errs[i], ids[0])
		}
	}
	// A replica started later reads the stored registration instead of registering.
	svc := e.replica()
	rt, _ := svc.Route(remoteRoute)
	as, err := svc.upstreamAS(context.Background(), rt)
	if err != nil || as.clientID != ids[0] || as.clientSecret == "" {
		t.Fatalf("a later replica uses client %q (secret set %v), %v; want %q", as.clientID, as.clientSecret != "", err, ids[0])
	}
	e.v.mu.Lock()
	registered := e.v.registered
	e.v.mu.Unlock()
	t.Logf("%d registrations made by %d replicas racing", registered, n)
	if registered > n {
		t.Errorf("%d registrations", registered)
	}
}

// TestDiscovery_CallbackRefusesAChangedClient: when re-discovery between the start of a flow
// and its callback finds another client (here: the registration was lost and made again), the
// callback refuses to exchange the code rather than mixing the two.
func TestDiscovery_CallbackRefusesAChangedClient(t *testing.T) {
	t.Parallel()
	e := newDiscoveryEnv(t, "{}", false)
	sid := e.session("alice")
	rec := e.startConnect(sid)
	if rec.Code != http.StatusSeeOther {
		t.Fatalf("connect: %d", rec.Code)
	}
	redirect := "https://remote.example.com" + paths.UpstreamCallback
	reg, err := e.st.GetUpstreamClient(context.Background(), vendorIssuer, redirect, e.clock.now())
	if err != nil {
		t.Fatal(err)
	}
	if err := e.st.DeleteUpstreamClient(context.Background(), vendorIssuer, redirect, reg.CreatedAt); err != nil {
		t.Fatal(err)
	}
	e.svc.disc.invalidate(remoteRoute)
	resp, err := e.client.Get(rec.Header().Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	back := e.do(resp.Header.Get("Location"), sid)
	if back.Code != http.StatusBadGateway || !strings.Contains(back.Body.String(), "changed while you were signing in") {
		t.Fatalf("callback: %d %s, want the changed-provider page", back.Code, back.Body.String())
	}
	e.v.mu.Lock()
	defer e.v.mu.Unlock()
	if len(e.v.tokenForms) != 0 {
		t.Error("the code was exchanged")
	}
}
