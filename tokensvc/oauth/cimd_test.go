package oauth

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/tokensvc/reqid"
	"github.com/mcpmesh/gateway/tokensvc/store"
)

func TestParseClientIDURL(t *testing.T) {
	t.Parallel()
	cases := []struct {
		id string
		ok bool
	}{
		{"https://app.example.com/client.json", true},
		{"https://app.example.com:8443/oauth/client-metadata", true},
		{"https://app.example.com/c?v=1", true},
		{"http://app.example.com/client.json", false},
		{"https://app.example.com", false},
		{"https://app.example.com/", false},
		{"https://app.example.com/c#frag", false},
		{"https://user@app.example.com/c", false},
		{"https://app.example.com/a/../c", false},
		{"https://app.example.com/./c", false},
		{"https://app.example.com/a/%2e%2e/c", false},
		{"https://127.0.0.1/c", false},
		{"https://[::1]/c", false},
		{"https://app_example.com/c", false},
		{"https://app.example.com:0/c", false},
		{"https://app.example.com/c d", false},
		{"HTTPS://app.example.com/c", false}, // must equal its document's client_id byte for byte
	}
	for _, tc := range cases {
		if _, err := parseClientIDURL(tc.id); (err == nil) != tc.ok {
			t.Errorf("parseClientIDURL(%q) = %v, want ok=%v", tc.id, err, tc.ok)
		}
	}
}

func TestCacheTTL(t *testing.T) {
	t.Parallel()
	cases := map[string]time.Duration{
		"":                           5 * time.Minute,
		"max-age=60":                 time.Minute,
		"public, max-age=120":        2 * time.Minute,
		"max-age=999999999":          24 * time.Hour,
		"max-age=0":                  0,
		"no-store":                   0,
		"max-age=600, no-store":      0,
		"no-cache":                   0,
		"max-age=-1":                 0,
		"max-age=abc":                0,
		`max-age="30"`:               30 * time.Second,
		"private, must-revalidate":   5 * time.Minute,
		"MAX-AGE=90, stale-if-error": 90 * time.Second,
	}
	for cc, want := range cases {
		if got := cacheTTL(cc); got != want {
			t.Errorf("cacheTTL(%q) = %v, want %v", cc, got, want)
		}
	}
}

// docServer serves client ID metadata documents over TLS on loopback.
type docServer struct {
	*httptest.Server
	mu   sync.Mutex
	hits map[string]int
}

func (d *docServer) count(path string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.hits[path]
}

// base is the client ID prefix naming the server by a DNS name (localhost).
func (d *docServer) base() string {
	return "https://localhost:" + d.URL[strings.LastIndex(d.URL, ":")+1:]
}

func newDocServer(t *testing.T) *docServer {
	t.Helper()
	d := &docServer{hits: map[string]int{}}
	d.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.mu.Lock()
		d.hits[r.URL.Path]++
		d.mu.Unlock()
		self := "https://" + r.Host + r.URL.Path
		doc := map[string]any{
			"client_id": self, "client_name": "Doc Client",
			"redirect_uris":              []string{loopbackCB},
			"grant_types":                []string{"authorization_code", "refresh_token"},
			"token_endpoint_auth_method": "none",
		}
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/client.json":
		case "/nostore.json":
			w.Header().Set("Cache-Control", "no-store")
		case "/redirect.json":
			http.Redirect(w, r, "/client.json", http.StatusFound)
			return
		case "/big.json":
			doc["padding"] = strings.Repeat("x", maxBodyBytes)
		case "/mismatch.json":
			doc["client_id"] = "https://other.example.com/client.json"
		case "/html.json":
			w.Header().Set("Content-Type", "text/html")
		case "/missing.json":
			http.NotFound(w, r)
			return
		case "/javascript.json":
			doc["redirect_uris"] = []string{"javascript:alert(1)"}
		case "/secret.json":
			doc["token_endpoint_auth_method"] = "client_secret_basic"
		case "/slow.json":
			time.Sleep(time.Second)
		}
		_ = json.NewEncoder(w).Encode(doc)
	}))
	t.Cleanup(d.Close)
	return d
}

// loopbackDocClient trusts d's certificate and explicitly allows loopback.
func loopbackDocClient(d *docServer, timeout time.Duration) *http.Client {
	pool := x509.NewCertPool()
	pool.AddCert(d.Certificate())
	return NewDocumentClient(DocumentClientOptions{
		AllowAddr: func(a netip.Addr) bool { return a.IsLoopback() },
		TLSConfig: &tls.Config{RootCAs: pool, ServerName: "example.com"}, // httptest's certificate name
		Timeout:   timeout,
	})
}

func docParams(clientID string) url.Values {
	_, challenge := pkce()
	p := authParams(registered{ID: clientID, RedirectURI: loopbackCB}, challenge)
	return p
}

func TestClientIDDocument_FlowAndCache(t *testing.T) {
	t.Parallel()
	d := newDocServer(t)
	e := newEnv(t, WithDocumentClient(loopbackDocClient(d, 0)))
	id := d.base() + "/client.json"
	c := registered{ID: id, RedirectURI: loopbackCB, Method: authNone}
	sess := e.newSession("alice")

	rec := e.get(issuer+paths.Authorize+"?"+docParams(id).Encode(), sess.ID)
	handle := consentHandle(t, rec)
	if body := rec.Body.String(); !strings.Contains(body, "Doc Client") || !strings.Contains(body, id) {
		t.Errorf("consent page lacks the client's name or ID")
	}
	_ = handle
	code, verifier := e.authorizeCode(c, sess, url.Values{"client_id": {id}})
	tr := tokens(t, e.token(c, codeForm(c, code, verifier)))
	tokens(t, e.token(c, refreshForm(tr.RefreshToken)))
	if n := d.count("/client.json"); n != 1 {
		t.Errorf("document fetched %d times, want 1 (cached)", n)
	}

	// A client cannot claim a secret-based method with a document-based ID.
	f := refreshForm("x")
	f.Set("client_secret", "anything")
	f.Set("client_id", id)
	wantOAuthError(t, e.postForm(issuer+paths.Token, f, ""), 401, errInvalidClient)

	// no-store documents are fetched each time.
	nostore := d.base() + "/nostore.json"
	for i := 0; i < 2; i++ {
		consentHandle(t, e.get(issuer+paths.Authorize+"?"+docParams(nostore).Encode(), sess.ID))
	}
	if n := d.count("/nostore.json"); n != 2 {
		t.Errorf("no-store document fetched %d times, want 2", n)
	}

	// The cache honours expiry.
	e.clock.Advance(6 * time.Minute)
	consentHandle(t, e.get(issuer+paths.Authorize+"?"+docParams(id).Encode(), sess.ID))
	if n := d.count("/client.json"); n != 2 {
		t.Errorf("document fetched %d times after expiry, want 2", n)
	}
}

func TestClientIDDocument_RefusedDocuments(t *testing.T) {
	t.Parallel()
	d := newDocServer(t)
	// The short bound is only for /slow.json; the other documents get a generous one so that
	// a loaded machine cannot turn their refusal into a time-out.
	e := newEnv(t, WithDocumentClient(loopbackDocClient(d, 10*time.Second)))
	slow := newEnv(t, WithDocumentClient(loopbackDocClient(d, 300*time.Millisecond)))
	sess := e.newSession("alice")
	slowSess := slow.newSession("alice")
	cases := []struct{ path, want string }{
		{"/redirect.json", "could not be fetched"},
		{"/big.json", "larger than 65536 bytes"},
		{"/mismatch.json", "client_id does not equal the URL"},
		{"/html.json", "not served as application/json"},
		{"/missing.json", "HTTP 404"},
		{"/javascript.json", "redirect_uris[0]"},
		{"/secret.json", "token_endpoint_auth_method must be none"},
		{"/slow.json", "could not be fetched"},
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			env, id := e, sess.ID
			if tc.path == "/slow.json" {
				env, id = slow, slowSess.ID
			}
			rec := env.get(issuer+paths.Authorize+"?"+docParams(d.base()+tc.path).Encode(), id)
			if rec.Code != http.StatusBadRequest || rec.Header().Get("Location") != "" {
				t.Fatalf("status %d Location %q", rec.Code, rec.Header().Get("Location"))
			}
			if !strings.Contains(rec.Body.String(), tc.want) {
				t.Errorf("page lacks %q:\n%s", tc.want, rec.Body)
			}
		})
	}
	if n := d.count("/client.json"); n != 0 {
		t.Errorf("the redirect was followed (%d hits)", n)
	}
}

func TestClientIDDocument_DisallowedDomainPage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sess := e.newSession("alice")
	cases := []struct{ name, id string }{
		{"other domain with markup", `https://evil.example.net/c?n=<b>x</b>&q="'`},
		{"bare domain of a *. pattern", "https://clients.example/client.json"},
		{"look-alike suffix", "https://evilclients.example/client.json"},
		{"subdomain of an exact pattern", "https://a.exact.example.org/client.json"},
		{"IP literal", "https://127.0.0.1/client.json"},
		{"http URL", "http://evil.example.net/client.json"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, issuer+paths.Authorize+"?"+docParams(tc.id).Encode(), nil)
			req.AddCookie(&http.Cookie{Name: testCookie, Value: sess.ID})
			req.Header.Set("X-Request-Id", "req-4711")
			rec := e.do(req)
			body := rec.Body.String()
			if rec.Code != http.StatusBadRequest || rec.Header().Get("Location") != "" {
				t.Fatalf("status %d", rec.Code)
			}
			for _, want := range []string{"administrator has restricted the list of MCP client ID document domains", "req-4711", htmlEscape(tc.id)} {
				if !strings.Contains(body, want) {
					t.Errorf("page lacks %q:\n%s", want, body)
				}
			}
			if strings.Contains(body, "<b>x</b>") {
				t.Error("client ID not escaped")
			}
		})
	}

	// An ID already in the request's context (reqid.Middleware ran first) wins; without any,
	// one is generated.
	req := httptest.NewRequest(http.MethodGet, issuer+paths.Authorize+"?"+docParams("https://evil.example.net/c").Encode(), nil)
	req = req.WithContext(reqid.NewContext(req.Context(), "chi-id-42"))
	if body := e.do(req).Body.String(); !strings.Contains(body, "chi-id-42") {
		t.Error("page lacks chi's request ID")
	}
	req = httptest.NewRequest(http.MethodGet, issuer+paths.Authorize+"?"+docParams("https://evil.example.net/c").Encode(), nil)
	if body := e.do(req).Body.String(); !strings.Contains(body, "Request ID: <code>") {
		t.Error("page lacks a request ID")
	}
}

func htmlEscape(s string) string {
	r := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;")
	return r.Replace(s)
}

func TestClientIDDocument_DefaultClientRefusesLoopbackAtConnect(t *testing.T) {
	t.Parallel()
	d := newDocServer(t)
	e := newEnv(t) // production document client
	sess := e.newSession("alice")
	// localhost is an allowed domain in the test config and resolves to
	// loopback: the name passes the domain check, the connection does not.
	rec := e.get(issuer+paths.Authorize+"?"+docParams(d.base()+"/client.json").Encode(), sess.ID)
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "non-public address") {
		t.Fatalf("status %d:\n%s", rec.Code, rec.Body)
	}
	if n := d.count("/client.json"); n != 0 {
		t.Fatalf("the server was reached %d times", n)
	}
}

func TestDocumentClient_RefusesSSRFTargets(t *testing.T) {
	t.Parallel()
	d := newDocServer(t)
	port := d.URL[strings.LastIndex(d.URL, ":")+1:]
	client := NewDocumentClient(DocumentClientOptions{Timeout: 2 * time.Second})
	targets := []string{
		"https://127.0.0.1:" + port + "/client.json",
		"https://localhost:" + port + "/client.json",
		"https://10.0.0.1/client.json",
		"https://169.254.169.254/latest/meta-data",
		"https://100.64.0.1/client.json",
		"https://192.168.0.1/client.json",
		"https://[::1]:" + port + "/client.json",
		"https://[fc00::1]/client.json",
		"https://[::ffff:127.0.0.1]:" + port + "/client.json",
		"https://[64:ff9b::7f00:1]/client.json",
		"https://[fe80::1]/client.json",
		"https://0.0.0.0:" + port + "/client.json",
	}
	for _, target := range targets {
		resp, err := client.Get(target)
		if err == nil {
			resp.Body.Close()
			t.Errorf("%s: fetched", target)
			continue
		}
		if !errors.Is(err, ErrForbiddenAddress) {
			if strings.Contains(err.Error(), "address family not supported") {
				continue // no IPv6 on this machine: refused anyway
			}
			t.Errorf("%s: %v, want ErrForbiddenAddress", target, err)
		}
	}
	if n := d.count("/client.json"); n != 0 {
		t.Errorf("the loopback server was reached %d times", n)
	}
}

func TestDocumentResolver_CacheIsBounded(t *testing.T) {
	t.Parallel()
	clock := &testClock{t: time.Unix(0, 0)}
	r := newDocumentResolver(nil, clock.Now, nil, 3)
	for i := 0; i < 5; i++ {
		id := fmt.Sprintf("https://c%d.example/x", i)
		r.put(id, docClient(id), clock.Now().Add(time.Hour))
	}
	if _, ok := r.cached("https://c0.example/x"); ok {
		t.Error("oldest entry survived")
	}
	if _, ok := r.cached("https://c4.example/x"); !ok {
		t.Error("newest entry evicted")
	}
	if r.lru.Len() != 3 || len(r.index) != 3 {
		t.Errorf("size %d/%d", r.lru.Len(), len(r.index))
	}
}

func docClient(id string) metadataDocument {
	return metadataDocument{client: store.Client{ID: id, Kind: store.ClientMetadataDocument}}
}
