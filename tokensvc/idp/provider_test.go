package idp

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// fakeProvider is a minimal OpenID provider for unit tests: discovery, JWKS, a token
// endpoint for the authorization_code (with PKCE) and refresh_token grants, and userinfo.
type fakeProvider struct {
	t   *testing.T
	srv *httptest.Server
	key *ecdsa.PrivateKey
	now func() time.Time

	mu        sync.Mutex
	down      bool
	codes     map[string]fakeCode  // code -> what it was issued for
	refresh   map[string]string    // refresh token -> subject
	access    map[string]string    // access token -> subject
	claims    map[string]any       // extra ID token claims
	userinfo  map[string]any       // extra userinfo claims
	mutate    func(map[string]any) // changes ID token claims before signing
	noRotate  bool
	noRefresh bool              // issue no refresh token at all
	signKey   *ecdsa.PrivateKey // signs ID tokens instead of key, when set
	tokenFail int               // status the token endpoint answers with, when set
	discovery int               // discovery requests served
	// iss is the issuer the gateway is configured with (default the server's URL);
	// discoIss the issuer of the discovery document (default iss), tokenIss the iss of ID
	// tokens (default discoIss). Discovery is served under any path.
	iss, discoIss, tokenIss string
	// secret is the client secret the token endpoint wants (default fakeClientSecret).
	secret string
	// lastToken is the form of the last token request.
	lastToken map[string]string
}

type fakeCode struct {
	subject, challenge, nonce string
}

const (
	fakeClientID     = "gw-client"
	fakeClientSecret = "gw-secret"
)

func newFakeProvider(t *testing.T) *fakeProvider {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p := &fakeProvider{
		t: t, key: key, now: time.Now,
		codes: map[string]fakeCode{}, refresh: map[string]string{}, access: map[string]string{},
		claims: map[string]any{}, userinfo: map[string]any{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /", func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/.well-known/openid-configuration") {
			http.NotFound(w, r)
			return
		}
		p.serveDiscovery(w, r)
	})
	mux.HandleFunc("GET /jwks", p.serveJWKS)
	mux.HandleFunc("POST /token", p.serveToken)
	mux.HandleFunc("GET /userinfo", p.serveUserInfo)
	p.srv = httptest.NewServer(mux)
	t.Cleanup(p.srv.Close)
	return p
}

func (p *fakeProvider) issuer() string {
	if p.iss != "" {
		return p.iss
	}
	return p.srv.URL
}

func (p *fakeProvider) discoveryIssuer() string {
	if p.discoIss != "" {
		return p.discoIss
	}
	return p.issuer()
}

func (p *fakeProvider) tokenIssuer() string {
	if p.tokenIss != "" {
		return p.tokenIss
	}
	return p.discoveryIssuer()
}

// issueCode records a code as the provider's login page would after the user signed in.
func (p *fakeProvider) issueCode(subject, challenge, nonce string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	code := rand.Text()
	p.codes[code] = fakeCode{subject, challenge, nonce}
	return code
}

func (p *fakeProvider) serveDiscovery(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.discovery++
	down := p.down
	p.mu.Unlock()
	if down {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	writeJSON(w, map[string]any{
		"issuer":                                p.discoveryIssuer(),
		"authorization_endpoint":                p.srv.URL + "/authorize",
		"token_endpoint":                        p.srv.URL + "/token",
		"jwks_uri":                              p.srv.URL + "/jwks",
		"userinfo_endpoint":                     p.srv.URL + "/userinfo",
		"id_token_signing_alg_values_supported": []string{"ES256"},
		"response_types_supported":              []string{"code"},
		"subject_types_supported":               []string{"public"},
	})
}

func (p *fakeProvider) serveJWKS(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &p.key.PublicKey, KeyID: "k1", Algorithm: "ES256", Use: "sig"}}})
}

func (p *fakeProvider) serveToken(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tokenFail != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(p.tokenFail)
		_, _ = w.Write([]byte(`{"error":"server_error"}`))
		return
	}
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = r.PostFormValue("client_id"), r.PostFormValue("client_secret")
	}
	_ = r.ParseForm()
	p.lastToken = map[string]string{}
	for k := range r.PostForm {
		p.lastToken[k] = r.PostForm.Get(k)
	}
	want := fakeClientSecret
	if p.secret != "" {
		want = p.secret
	}
	if id != fakeClientID || secret != want {
		oauthError(w, http.StatusUnauthorized, "invalid_client")
		return
	}
	var subject, nonce string
	switch r.PostFormValue("grant_type") {
	case "authorization_code":
		c, ok := p.codes[r.PostFormValue("code")]
		delete(p.codes, r.PostFormValue("code"))
		sum := sha256.Sum256([]byte(r.PostFormValue("code_verifier")))
		if !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != c.challenge {
			oauthError(w, http.StatusBadRequest, "invalid_grant")
			return
		}
		subject, nonce = c.subject, c.nonce
	case "refresh_token":
		s, ok := p.refresh[r.PostFormValue("refresh_token")]
		if !ok {
			oauthError(w, http.StatusBadRequest, "invalid_grant")
			return
		}
		if !p.noRotate {
			delete(p.refresh, r.PostFormValue("refresh_token"))
		}
		subject = s
	default:
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type")
		return
	}
	at := rand.Text()
	p.access[at] = subject
	resp := map[string]any{"access_token": at, "token_type": "Bearer", "expires_in": 3600, "id_token": p.idToken(subject, nonce)}
	if !p.noRefresh && (!p.noRotate || r.PostFormValue("grant_type") == "authorization_code") {
		rt := rand.Text()
		p.refresh[rt] = subject
		resp["refresh_token"] = rt
	}
	writeJSON(w, resp)
}

// idToken signs an ID token; p.mu is held.
func (p *fakeProvider) idToken(subject, nonce string) string {
	now := p.now()
	c := map[string]any{
		"iss": p.tokenIssuer(), "sub": subject, "aud": fakeClientID,
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix(),
		"email": subject + "@example.com", "email_verified": true, "name": "User " + subject,
		"groups": []string{"eng", "ops"},
	}
	if nonce != "" {
		c["nonce"] = nonce
	}
	for k, v := range p.claims {
		c[k] = v
	}
	if p.mutate != nil {
		p.mutate(c)
	}
	key := p.key
	if p.signKey != nil {
		key = p.signKey
	}
	return signES256(p.t, key, "k1", c)
}

func (p *fakeProvider) serveUserInfo(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	const prefix = "Bearer "
	h := r.Header.Get("Authorization")
	if len(h) <= len(prefix) {
		http.Error(w, "no token", http.StatusUnauthorized)
		return
	}
	subject, ok := p.access[h[len(prefix):]]
	if !ok {
		http.Error(w, "bad token", http.StatusUnauthorized)
		return
	}
	c := map[string]any{"sub": subject}
	for k, v := range p.userinfo {
		c[k] = v
	}
	writeJSON(w, c)
}

func signES256(t *testing.T, key *ecdsa.PrivateKey, kid string, claims map[string]any) string {
	t.Helper()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key}, (&jose.SignerOptions{}).WithHeader("kid", kid))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(claims)
	jws, err := s.Sign(b)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func oauthError(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": code})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
