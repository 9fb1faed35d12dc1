package oauth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/tokensvc/secret"
)

// keyDocServer serves, over TLS on loopback, client ID metadata documents of
// private_key_jwt clients and their JWK Sets.
type keyDocServer struct {
	*httptest.Server
	mu    sync.Mutex
	keys  []jose.JSONWebKey // the published public keys
	hits  map[string]int
	extra map[string]map[string]any // per path: document members to set
}

func newKeyDocServer(t *testing.T) *keyDocServer {
	t.Helper()
	d := &keyDocServer{hits: map[string]int{}, extra: map[string]map[string]any{}}
	d.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.mu.Lock()
		defer d.mu.Unlock()
		d.hits[r.URL.Path]++
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/jwks.json" {
			_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: d.keys})
			return
		}
		self := "https://" + r.Host + r.URL.Path
		doc := map[string]any{
			"client_id": self, "client_name": "Key Client",
			"redirect_uris":              []string{loopbackCB, "com.example.keyclient:/cb"},
			"grant_types":                []string{"authorization_code", "refresh_token"},
			"token_endpoint_auth_method": "private_key_jwt",
			"jwks_uri":                   "https://" + r.Host + "/jwks.json",
		}
		for k, v := range d.extra[r.URL.Path] {
			doc[k] = v
		}
		_ = json.NewEncoder(w).Encode(doc)
	}))
	t.Cleanup(d.Close)
	return d
}

func (d *keyDocServer) base() string {
	return "https://localhost:" + d.URL[strings.LastIndex(d.URL, ":")+1:]
}

func (d *keyDocServer) count(path string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.hits[path]
}

// publish replaces the published keys.
func (d *keyDocServer) publish(keys ...jose.JSONWebKey) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.keys = keys
}

func (d *keyDocServer) client() *http.Client {
	return loopbackDocClient(&docServer{Server: d.Server}, 2*time.Second)
}

// signingKey is an EC key with its kid.
type signingKey struct {
	priv *ecdsa.PrivateKey
	kid  string
}

func newSigningKey(t *testing.T, kid string) signingKey {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return signingKey{priv: priv, kid: kid}
}

func (k signingKey) public() jose.JSONWebKey {
	return jose.JSONWebKey{Key: &k.priv.PublicKey, KeyID: k.kid, Algorithm: string(jose.ES256), Use: "sig"}
}

// assertion signs claims with k.
func (k signingKey) assertion(t *testing.T, claims jwt.Claims) string {
	t.Helper()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: k.priv, KeyID: k.kid}}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := jwt.Signed(signer).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// claimsFor are valid assertion claims of clientID at e's clock.
func claimsFor(e *env, clientID string) jwt.Claims {
	now := e.clock.Now()
	return jwt.Claims{
		Issuer: clientID, Subject: clientID, Audience: jwt.Audience{issuer + paths.Token},
		Expiry: jwt.NewNumericDate(now.Add(time.Minute)), IssuedAt: jwt.NewNumericDate(now),
		ID: secret.NewToken(),
	}
}

func assertionForm(form url.Values, assertion string) url.Values {
	form.Del("client_id")
	form.Set("client_assertion_type", clientAssertionTypeJWT)
	form.Set("client_assertion", assertion)
	return form
}

func TestPrivateKeyJWT_MetadataDocumentClient(t *testing.T) {
	t.Parallel()
	d := newKeyDocServer(t)
	key := newSigningKey(t, "k1")
	d.publish(key.public())
	e := newEnv(t, WithDocumentClient(d.client()))
	id := d.base() + "/client.json"
	c := registered{ID: id, RedirectURI: loopbackCB, Method: authPrivateKeyJWT}
	sess := e.newSession("alice")

	// The consent page shows the document's name as its own, its publisher and every
	// redirect URI it registered.
	rec := e.get(issuer+paths.Authorize+"?"+docParams(id).Encode(), sess.ID)
	consentHandle(t, rec)
	body := rec.Body.String()
	for _, want := range []string{"Key Client", "name chosen by the application", "Published at", htmlEscape(strings.TrimPrefix(d.base(), "https://")), htmlEscape("com.example.keyclient:/cb"), "a program on this computer"} {
		if !strings.Contains(body, want) {
			t.Errorf("consent page lacks %q", want)
		}
	}

	code, verifier := e.authorizeCode(c, sess, url.Values{"client_id": {id}})
	first := key.assertion(t, claimsFor(e, id))
	tr := tokens(t, e.postForm(issuer+paths.Token, assertionForm(codeForm(c, code, verifier), first), ""))
	if tr.RefreshToken == "" {
		t.Fatal("no refresh token")
	}
	// A new assertion refreshes; the same one again is a replay.
	rf := assertionForm(refreshForm(tr.RefreshToken), key.assertion(t, claimsFor(e, id)))
	next := tokens(t, e.postForm(issuer+paths.Token, rf, ""))
	wantOAuthError(t, e.postForm(issuer+paths.Token, assertionForm(refreshForm(next.RefreshToken), first), ""), 401, errInvalidClient)
	// Without an assertion the client cannot authenticate.
	f := refreshForm(next.RefreshToken)
	f.Set("client_id", id)
	wantOAuthError(t, e.postForm(issuer+paths.Token, f, ""), 401, errInvalidClient)
	if n := d.count("/jwks.json"); n != 1 {
		t.Errorf("JWK Set fetched %d times, want 1 (cached)", n)
	}

	// Key rotation: an unknown kid refetches the set once.
	rotated := newSigningKey(t, "k2")
	d.publish(key.public(), rotated.public())
	e.clock.Advance(jwksRefetchInterval)
	tokens(t, e.postForm(issuer+paths.Token, assertionForm(refreshForm(next.RefreshToken), rotated.assertion(t, claimsFor(e, id))), ""))
	if n := d.count("/jwks.json"); n != 2 {
		t.Errorf("JWK Set fetched %d times after rotation, want 2", n)
	}
	// Made-up key IDs right after do not make the server fetch again.
	for i := 0; i < 3; i++ {
		bogus := newSigningKey(t, "bogus")
		wantOAuthError(t, e.postForm(issuer+paths.Token, assertionForm(refreshForm("x"), bogus.assertion(t, claimsFor(e, id))), ""), 401, errInvalidClient)
	}
	if n := d.count("/jwks.json"); n != 2 {
		t.Errorf("JWK Set fetched %d times for unknown kids, want 2", n)
	}
}

func TestPrivateKeyJWT_RefusedAssertions(t *testing.T) {
	t.Parallel()
	d := newKeyDocServer(t)
	key := newSigningKey(t, "k1")
	d.publish(key.public())
	e := newEnv(t, WithDocumentClient(d.client()))
	id := d.base() + "/client.json"
	attacker := newSigningKey(t, "k1") // same kid, another key

	hs256WithPublicKey := func() string {
		der, _ := x509.MarshalPKIXPublicKey(&key.priv.PublicKey)
		signer, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: der}, nil)
		raw, _ := jwt.Signed(signer).Claims(claimsFor(e, id)).Serialize()
		return raw
	}
	unsigned := func() string {
		h := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`))
		p, _ := json.Marshal(claimsFor(e, id))
		return h + "." + base64.RawURLEncoding.EncodeToString(p) + "."
	}
	tampered := func() string {
		raw := key.assertion(t, claimsFor(e, id))
		parts := strings.Split(raw, ".")
		c := claimsFor(e, id)
		c.Subject = "https://localhost/other.json"
		p, _ := json.Marshal(c)
		return parts[0] + "." + base64.RawURLEncoding.EncodeToString(p) + "." + parts[2]
	}
	with := func(mut func(*jwt.Claims)) string {
		c := claimsFor(e, id)
		mut(&c)
		return key.assertion(t, c)
	}
	cases := map[string]string{
		"forged: another key with the same kid": attacker.assertion(t, claimsFor(e, id)),
		"HS256 with the public key as secret":   hs256WithPublicKey(),
		"unsigned (alg none)":                   unsigned(),
		"tampered claims":                       tampered(),
		"expired":                               with(func(c *jwt.Claims) { c.Expiry = jwt.NewNumericDate(e.clock.Now().Add(-time.Minute)) }),
		"exp too far ahead":                     with(func(c *jwt.Claims) { c.Expiry = jwt.NewNumericDate(e.clock.Now().Add(time.Hour)) }),
		"no exp":                                with(func(c *jwt.Claims) { c.Expiry = nil }),
		"not yet valid":                         with(func(c *jwt.Claims) { c.NotBefore = jwt.NewNumericDate(e.clock.Now().Add(5 * time.Minute)) }),
		"aud of another server":                 with(func(c *jwt.Claims) { c.Audience = jwt.Audience{"https://other.example/token"} }),
		"aud of another route host":             with(func(c *jwt.Claims) { c.Audience = jwt.Audience{soloIssuer + paths.Token} }),
		"iss is not sub":                        with(func(c *jwt.Claims) { c.Issuer = "https://localhost/evil.json" }),
		"no jti":                                with(func(c *jwt.Claims) { c.ID = "" }),
		"garbage":                               "not.a.jwt",
		"empty":                                 "",
	}
	for name, a := range cases {
		t.Run(name, func(t *testing.T) {
			wantOAuthError(t, e.postForm(issuer+paths.Token, assertionForm(refreshForm("x"), a), ""), 401, errInvalidClient)
		})
	}
	t.Run("wrong assertion type", func(t *testing.T) {
		f := assertionForm(refreshForm("x"), key.assertion(t, claimsFor(e, id)))
		f.Set("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:saml2-bearer")
		wantOAuthError(t, e.postForm(issuer+paths.Token, f, ""), 401, errInvalidClient)
	})
	t.Run("assertion and a secret", func(t *testing.T) {
		f := assertionForm(refreshForm("x"), key.assertion(t, claimsFor(e, id)))
		f.Set("client_secret", "s")
		wantOAuthError(t, e.postForm(issuer+paths.Token, f, ""), 400, errInvalidRequest)
	})
	t.Run("client_id differs from sub", func(t *testing.T) {
		f := assertionForm(refreshForm("x"), key.assertion(t, claimsFor(e, id)))
		f.Set("client_id", d.base()+"/other.json")
		wantOAuthError(t, e.postForm(issuer+paths.Token, f, ""), 401, errInvalidClient)
	})
	t.Run("registered client cannot use private_key_jwt", func(t *testing.T) {
		c := e.register(nil)
		a := key.assertion(t, jwt.Claims{Issuer: c.ID, Subject: c.ID, Audience: jwt.Audience{issuer + paths.Token}, Expiry: jwt.NewNumericDate(e.clock.Now().Add(time.Minute)), ID: "j"})
		wantOAuthError(t, e.postForm(issuer+paths.Token, assertionForm(refreshForm("x"), a), ""), 401, errInvalidClient)
	})
}

// A jwks_uri on a private or loopback address is never connected to, and one given as an IP
// address is refused before any connection.
func TestPrivateKeyJWT_JWKSURIOnNonPublicAddressIsNeverFetched(t *testing.T) {
	t.Parallel()
	d := newKeyDocServer(t)
	key := newSigningKey(t, "k1")
	d.publish(key.public())
	e := newEnv(t) // the production document client: public addresses only
	id := "https://app.clients.example/client.json"
	doc := metadataDocument{jwksURI: d.base() + "/jwks.json"} // localhost: an allowed domain, a loopback address
	doc.client = docClient(id).client
	doc.client.TokenEndpointAuthMethod, doc.client.GrantTypes = authPrivateKeyJWT, []string{"authorization_code", "refresh_token"}
	e.srv.docs.put(id, doc, e.clock.Now().Add(time.Hour))
	rec := e.postForm(issuer+paths.Token, assertionForm(refreshForm("x"), key.assertion(t, claimsFor(e, id))), "")
	wantOAuthError(t, rec, 401, errInvalidClient)
	if !strings.Contains(rec.Body.String(), "non-public address") {
		t.Errorf("error: %s", rec.Body)
	}
	if n := d.count("/jwks.json"); n != 0 {
		t.Fatalf("the loopback JWK Set was fetched %d times", n)
	}

	for _, jwks := range []string{"https://127.0.0.1/jwks.json", "https://[::1]/jwks.json", "https://169.254.169.254/latest", "http://keys.clients.example/jwks.json"} {
		body, _ := json.Marshal(map[string]any{"client_id": id, "redirect_uris": []string{loopbackCB}, "token_endpoint_auth_method": "private_key_jwt", "jwks_uri": jwks})
		if _, err := parseDocument(body, id); err == nil || !strings.Contains(err.Error(), "jwks_uri") {
			t.Errorf("jwks_uri %s: %v", jwks, err)
		}
	}
	// Keys by value and a missing jwks_uri are refused too.
	for _, extra := range []map[string]any{{"jwks": map[string]any{"keys": []any{}}}, {}} {
		m := map[string]any{"client_id": id, "redirect_uris": []string{loopbackCB}, "token_endpoint_auth_method": "private_key_jwt"}
		for k, v := range extra {
			m[k] = v
		}
		body, _ := json.Marshal(m)
		if _, err := parseDocument(body, id); err == nil {
			t.Errorf("document %v accepted", m)
		}
	}
}

func TestPrivateKeyJWT_JWKSURIOutsideAllowedDomains(t *testing.T) {
	t.Parallel()
	d := newKeyDocServer(t)
	key := newSigningKey(t, "k1")
	d.publish(key.public())
	e := newEnv(t, WithDocumentClient(d.client()))
	id := d.base() + "/elsewhere.json"
	d.extra["/elsewhere.json"] = map[string]any{"jwks_uri": "https://keys.not-allowed.example/jwks.json"}
	wantOAuthError(t, e.postForm(issuer+paths.Token, assertionForm(refreshForm("x"), key.assertion(t, claimsFor(e, id))), ""), 401, errInvalidClient)
}

// Of concurrent requests carrying the same assertion, exactly one is authenticated.
func TestPrivateKeyJWT_ConcurrentReplaysAuthenticateOnce(t *testing.T) {
	t.Parallel()
	d := newKeyDocServer(t)
	key := newSigningKey(t, "k1")
	d.publish(key.public())
	e := newEnv(t, WithDocumentClient(d.client()))
	id := d.base() + "/client.json"
	c := claimsFor(e, id)
	c.Audience = jwt.Audience{issuer + paths.Revoke}
	a := key.assertion(t, c)
	const n = 8
	codes := make(chan int, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f := assertionForm(url.Values{"token": {"some-token"}}, a)
			codes <- e.postForm(issuer+paths.Revoke, f, "").Code
		}()
	}
	wg.Wait()
	close(codes)
	ok := 0
	for code := range codes {
		switch code {
		case http.StatusOK:
			ok++
		case http.StatusUnauthorized:
		default:
			t.Errorf("status %d", code)
		}
	}
	if ok != 1 {
		t.Fatalf("%d of %d concurrent requests with one assertion were authenticated, want 1", ok, n)
	}
}

// application_type applies to client ID metadata documents as to registrations: a document of
// a web application with an app's private-use scheme is refused, a native one is used.
func TestClientIDDocument_ApplicationType(t *testing.T) {
	t.Parallel()
	d := newKeyDocServer(t)
	d.publish(newSigningKey(t, "k1").public())
	d.extra["/web.json"] = map[string]any{"application_type": "web", "token_endpoint_auth_method": "none"}
	d.extra["/native.json"] = map[string]any{"application_type": "native", "token_endpoint_auth_method": "none"}
	e := newEnv(t, WithDocumentClient(d.client()))
	sess := e.newSession("alice")
	rec := e.get(issuer+paths.Authorize+"?"+docParams(d.base()+"/web.json").Encode(), sess.ID)
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "web application") {
		t.Fatalf("web document with an app scheme: %d\n%s", rec.Code, rec.Body)
	}
	consentHandle(t, e.get(issuer+paths.Authorize+"?"+docParams(d.base()+"/native.json").Encode(), sess.ID))
}
