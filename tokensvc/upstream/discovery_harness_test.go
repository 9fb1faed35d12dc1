package upstream

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/tokensvc/hosts"
	"github.com/mcpmesh/gateway/tokensvc/internal/netguard"
	"github.com/mcpmesh/gateway/tokensvc/reqid"
	"github.com/mcpmesh/gateway/tokensvc/secret"
	"github.com/mcpmesh/gateway/tokensvc/store"
	"github.com/mcpmesh/gateway/tokensvc/store/memory"
)

// The names of the fake vendor: an MCP server protecting itself with MCP authorization and
// its authorization server, both served by one TLS test server that every name dials.
const (
	vendorMCP    = "https://mcp.vendor.example/mcp"
	vendorIssuer = "https://auth.vendor.example"
	remoteRoute  = "https://remote.example.com/mcp"
)

// vendor is the fake upstream. Its handlers are keyed "host METHOD path"; tests replace them.
type vendor struct {
	t   testing.TB
	srv *httptest.Server

	mu       sync.Mutex
	handlers map[string]http.HandlerFunc
	hits     map[string]int
	// What the authorization server saw and issued.
	registered    int
	authorizeReqs []url.Values
	tokenForms    []url.Values
	codes         map[string]bool
	issued        []string
	clientSecret  string
}

func newVendor(t testing.TB) *vendor {
	v := &vendor{t: t, handlers: map[string]http.HandlerFunc{}, hits: map[string]int{}, codes: map[string]bool{}}
	v.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.Host)
		if host == "" {
			host = r.Host
		}
		k := host + " " + r.Method + " " + r.URL.Path
		v.mu.Lock()
		h := v.handlers[k]
		v.hits[k]++
		v.mu.Unlock()
		if h == nil {
			http.NotFound(w, r)
			return
		}
		h(w, r)
	}))
	t.Cleanup(v.srv.Close)
	v.set("mcp.vendor.example POST /mcp", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="vendor", resource_metadata="https://mcp.vendor.example/.well-known/oauth-protected-resource/mcp", scope="files:read"`)
		w.WriteHeader(http.StatusUnauthorized)
	})
	v.set("mcp.vendor.example GET /.well-known/oauth-protected-resource/mcp", jsonHandler("max-age=600", map[string]any{
		"resource": vendorMCP, "authorization_servers": []string{vendorIssuer}, "scopes_supported": []string{"files:read", "files:write"},
	}))
	v.setServerMetadata(nil)
	v.set("auth.vendor.example POST /register", func(w http.ResponseWriter, r *http.Request) {
		var req map[string]any
		_ = json.NewDecoder(r.Body).Decode(&req)
		v.mu.Lock()
		v.registered++
		n := v.registered
		v.clientSecret = "dyn-secret-" + secret.NewToken()[:10]
		sec := v.clientSecret
		v.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(map[string]any{"client_id": fmt.Sprintf("dyn-%d", n), "client_secret": sec,
			"token_endpoint_auth_method": req["token_endpoint_auth_method"], "redirect_uris": req["redirect_uris"]})
	})
	v.set("auth.vendor.example GET /authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		v.mu.Lock()
		v.authorizeReqs = append(v.authorizeReqs, q)
		code := "code-" + secret.NewToken()[:10]
		v.codes[code] = true
		v.mu.Unlock()
		http.Redirect(w, r, q.Get("redirect_uri")+"?"+url.Values{"code": {code}, "state": {q.Get("state")}, "iss": {vendorIssuer}}.Encode(), http.StatusFound)
	})
	v.set("auth.vendor.example POST /token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		v.mu.Lock()
		defer v.mu.Unlock()
		v.tokenForms = append(v.tokenForms, r.PostForm)
		id, sec, ok := r.BasicAuth()
		if v.clientSecret != "" && (!ok || sec != v.clientSecret || id == "") {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"error":"invalid_client"}`)
			return
		}
		switch r.PostForm.Get("grant_type") {
		case "authorization_code":
			if !v.codes[r.PostForm.Get("code")] {
				w.WriteHeader(http.StatusBadRequest)
				_, _ = io.WriteString(w, `{"error":"invalid_grant"}`)
				return
			}
			delete(v.codes, r.PostForm.Get("code"))
		case "refresh_token":
		}
		at, rt := "vendor-at-"+secret.NewToken()[:10], "vendor-rt-"+secret.NewToken()[:10]
		v.issued = append(v.issued, at, rt)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": at, "token_type": "Bearer", "expires_in": 3600, "refresh_token": rt})
	})
	return v
}

func (v *vendor) set(key string, h http.HandlerFunc) {
	v.mu.Lock()
	v.handlers[key] = h
	v.mu.Unlock()
}

func (v *vendor) hit(key string) int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.hits[key]
}

// setServerMetadata serves the authorization server's RFC 8414 metadata, with change applied.
func (v *vendor) setServerMetadata(change func(m map[string]any)) {
	m := map[string]any{
		"issuer":                                         vendorIssuer,
		"authorization_endpoint":                         vendorIssuer + "/authorize",
		"token_endpoint":                                 vendorIssuer + "/token",
		"registration_endpoint":                          vendorIssuer + "/register",
		"response_types_supported":                       []string{"code"},
		"code_challenge_methods_supported":               []string{"S256"},
		"token_endpoint_auth_methods_supported":          []string{"client_secret_basic", "none"},
		"scopes_supported":                               []string{"files:read", "files:write", "offline_access"},
		"authorization_response_iss_parameter_supported": true,
	}
	if change != nil {
		change(m)
	}
	v.set("auth.vendor.example GET /.well-known/oauth-authorization-server", jsonHandler("max-age=600", m))
}

func jsonHandler(cacheControl string, doc any) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if cacheControl != "" {
			w.Header().Set("Cache-Control", cacheControl)
		}
		_ = json.NewEncoder(w).Encode(doc)
	}
}

// denv is a Service with one upstream_discovery route whose upstream is the vendor.
type denv struct {
	t      testing.TB
	v      *vendor
	cfg    *config.Config
	st     store.Store
	svc    *Service
	clock  *clock
	logs   *syncBuffer
	h      http.Handler
	client *http.Client // the browser: the vendor's names, redirects not followed
	// replica returns another Service on the same store and configuration (a replica).
	replica func() *Service
}

// newDiscoveryEnv builds the environment; block is the route's upstream_discovery value and
// guarded keeps the production address guard, loopback aside (the rule of
// WithInsecureLoopbackDiscovery, so that the vendor's server stays reachable), and resolves
// every name under private.vendor.example to 10.0.0.1 and metadata.vendor.example to the
// link-local cloud metadata address.
func newDiscoveryEnv(t testing.TB, block string, guarded bool) *denv {
	t.Helper()
	return newDiscoveryEnvWith(t, block, guarded, "")
}

// newDiscoveryEnvWith is newDiscoveryEnv with more routes (YAML list items) after the vendor's.
func newDiscoveryEnvWith(t testing.TB, block string, guarded bool, moreRoutes string) *denv {
	t.Helper()
	v := newVendor(t)
	y := `
runtime_flags: {mcp: true}
authenticate_service_url: https://auth.example.com
shared_secret: ZGVtby1vbmx5LXNoYXJlZC1zZWNyZXQtMzItYnl0ZXM=
cookie_secret: ZGVtby1vbmx5LWNvb2tpZS1zZWNyZXQtMzItYnl0ZXM=
idp_provider: oidc
idp_provider_url: https://idp.example.com
idp_client_id: gw
idp_client_secret: s3cret
storage: {type: memory}
mcp_allowed_upstream_domains: ["*.vendor.example"]
routes:
  - name: App
    from: https://app.example.com
    to: http://app.internal
    mcp: {client: {}}
  - name: Vendor files
    from: ` + remoteRoute + `
    to: ` + vendorMCP + `
    policy: {allow: {and: [{authenticated_user: true}]}}
    mcp: {server: {upstream_discovery: ` + block + `}}
` + moreRoutes
	cfg, err := config.Parse([]byte(y), nil)
	if err != nil {
		t.Fatal(err)
	}
	st := memory.New()
	e := &denv{t: t, v: v, cfg: cfg, st: st, clock: &clock{t: time.Now()}, logs: &syncBuffer{}}
	sealer, err := secret.NewSealer(cfg.DeriveKey("seal"))
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	o := netguard.ClientOptions{
		Timeout:     2 * time.Second,
		TLSConfig:   &tls.Config{InsecureSkipVerify: true}, // the test certificate names no vendor host
		DialAddress: func(string) string { return v.srv.Listener.Addr().String() },
	}
	browser := netguard.NewClient(netguard.ClientOptions{TLSConfig: o.TLSConfig, DialAddress: o.DialAddress, AllowAddr: allowAll})
	e.client = &http.Client{Transport: browser.Transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if guarded {
		o.AllowAddr = func(a netip.Addr) bool { return netguard.PublicAddr(a) || a.IsLoopback() }
		o.DialAddress = func(hostport string) string {
			host, port, _ := net.SplitHostPort(hostport)
			switch {
			case strings.HasSuffix(host, "private.vendor.example"):
				return net.JoinHostPort("10.0.0.1", port)
			case host == "metadata.vendor.example":
				return net.JoinHostPort("169.254.169.254", port)
			}
			return v.srv.Listener.Addr().String()
		}
	} else {
		o.AllowAddr = allowAll
	}
	e.replica = func() *Service {
		return New(cfg, st, sealer, sessions{st}, WithClock(e.clock.now), WithLogger(log), WithDiscoveryClient(netguard.NewClient(o)))
	}
	e.svc = e.replica()
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+paths.Connect, e.svc.Connect)
	mux.HandleFunc("GET "+paths.UpstreamCallback, e.svc.Callback)
	mux.HandleFunc("GET "+paths.UpstreamClientMetadata, e.svc.ClientMetadata)
	// The authorization endpoint as far as pattern 2 goes: the chain, then a code.
	mux.HandleFunc("GET "+paths.Authorize, func(w http.ResponseWriter, r *http.Request) {
		sess, _ := sessions{st}.Current(r)
		if sess == nil || e.svc.BeforeCode(w, r, sess, r.URL.Query().Get("resource"), paths.Authorize+"?"+r.URL.RawQuery) {
			return
		}
		_, _ = io.WriteString(w, "code issued")
	})
	e.h = reqid.Middleware(hosts.NewTable(cfg).Middleware(mux))
	return e
}

func (e *denv) session(subject string) string {
	e.t.Helper()
	now := e.clock.now()
	s := store.Session{ID: secret.NewToken(), Subject: subject, Email: subject + "@example.com", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	if err := e.st.CreateSession(context.Background(), s); err != nil {
		e.t.Fatal(err)
	}
	return s.ID
}

func (e *denv) do(target, sid string) *httptest.ResponseRecorder {
	e.t.Helper()
	r := httptest.NewRequest("GET", target, nil)
	if sid != "" {
		r.AddCookie(&http.Cookie{Name: "sid", Value: sid})
	}
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, r)
	return rec
}

// startConnect asks for the connect flow of sid's user.
func (e *denv) startConnect(sid string) *httptest.ResponseRecorder {
	return e.do("https://remote.example.com"+paths.Connect+"?redirect_url="+url.QueryEscape(appURL), sid)
}

// connect runs the whole connect flow and returns the final answer.
func (e *denv) connect(sid string) *httptest.ResponseRecorder {
	e.t.Helper()
	rec := e.startConnect(sid)
	if rec.Code != http.StatusSeeOther {
		e.t.Fatalf("connect: %d %s", rec.Code, rec.Body.String())
	}
	resp, err := e.client.Get(rec.Header().Get("Location"))
	if err != nil {
		e.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		e.t.Fatalf("authorization server answered %d", resp.StatusCode)
	}
	return e.do(resp.Header.Get("Location"), sid)
}

func allowAll(netip.Addr) bool { return true }
