package oauth

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/tokensvc/secret"
	"github.com/mcpmesh/gateway/tokensvc/store"
)

func postJSON(e *env, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, issuer+paths.Register, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	return e.do(req)
}

func TestRegister_PublicClientAsTypeScriptSDKSendsIt(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rec := postJSON(e, `{"client_name":"MCP Inspector","redirect_uris":["http://localhost:6274/oauth/callback"],
		"grant_types":["authorization_code","refresh_token"],"response_types":["code"],
		"token_endpoint_auth_method":"none","scope":"offline_access","logo_uri":"https://x.example/l.png"}`)
	if rec.Code != http.StatusCreated {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	var m map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	id, _ := m["client_id"].(string)
	if len(id) < 40 {
		t.Errorf("client_id %q is not a random identifier", id)
	}
	if _, ok := m["client_secret"]; ok {
		t.Error("a public client got a secret")
	}
	if m["client_id_issued_at"] != float64(e.clock.Now().Unix()) {
		t.Errorf("client_id_issued_at = %v", m["client_id_issued_at"])
	}
	for k, want := range map[string]any{
		"token_endpoint_auth_method": "none",
		"redirect_uris":              []any{"http://localhost:6274/oauth/callback"},
		"grant_types":                []any{"authorization_code", "refresh_token"},
		"response_types":             []any{"code"},
		"client_name":                "MCP Inspector",
		"scope":                      "offline_access",
	} {
		if !reflect.DeepEqual(m[k], want) {
			t.Errorf("%s = %v, want %v", k, m[k], want)
		}
	}
	if rec.Header().Get("Cache-Control") != "no-store" || rec.Header().Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("headers %v", rec.Header())
	}
	c, err := e.st.GetClient(context.Background(), id, e.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if c.Kind != store.ClientDynamic || !c.ExpiresAt.Equal(store.Time(e.clock.Now().Add(30*24*time.Hour))) {
		t.Errorf("stored client %+v", c)
	}
}

func TestRegister_ConfidentialClientGetsSecretStoredAsHash(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, method := range []string{"", authSecretBasic, authSecretPost} {
		body := `{"redirect_uris":["https://client.example.com/cb"]` // RFC 7591 default: client_secret_basic
		if method != "" {
			body += `,"token_endpoint_auth_method":"` + method + `"`
		}
		rec := postJSON(e, body+"}")
		if rec.Code != http.StatusCreated {
			t.Fatalf("%q: status %d: %s", method, rec.Code, rec.Body)
		}
		var m map[string]any
		_ = json.Unmarshal(rec.Body.Bytes(), &m)
		want := method
		if want == "" {
			want = authSecretBasic
		}
		sec, _ := m["client_secret"].(string)
		if m["token_endpoint_auth_method"] != want || sec == "" || m["client_secret_expires_at"] != float64(0) {
			t.Fatalf("%q: response %v", method, m)
		}
		c, err := e.st.GetClient(context.Background(), m["client_id"].(string), e.clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(c.SecretHash, secret.Hash(sec)) || bytes.Contains(c.SecretHash, []byte(sec)) {
			t.Errorf("%q: the store does not hold exactly the secret's hash", method)
		}
	}
}

func TestRegister_RefusesBadMetadata(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cases := []struct {
		name, body, code string
	}{
		{"no redirect_uris", `{"client_name":"x"}`, errInvalidRedirectURI},
		{"empty redirect_uris", `{"redirect_uris":[]}`, errInvalidRedirectURI},
		{"javascript redirect", `{"redirect_uris":["javascript:alert(1)"]}`, errInvalidRedirectURI},
		{"data redirect", `{"redirect_uris":["data:text/html,x"]}`, errInvalidRedirectURI},
		{"file redirect", `{"redirect_uris":["file:///etc/passwd"]}`, errInvalidRedirectURI},
		{"http off loopback", `{"redirect_uris":["http://client.example.com/cb"]}`, errInvalidRedirectURI},
		{"fragment", `{"redirect_uris":["https://client.example.com/cb#x"]}`, errInvalidRedirectURI},
		{"wildcard", `{"redirect_uris":["https://*.example.com/cb"]}`, errInvalidRedirectURI},
		{"userinfo", `{"redirect_uris":["https://a@client.example.com/cb"]}`, errInvalidRedirectURI},
		{"one bad among good", `{"redirect_uris":["https://client.example.com/cb","javascript:x"]}`, errInvalidRedirectURI},
		{"redirect not a string", `{"redirect_uris":[1]}`, errInvalidClientMetadata},
		{"redirect_uris a string", `{"redirect_uris":"https://client.example.com/cb"}`, errInvalidClientMetadata},
		{"implicit grant", `{"redirect_uris":["https://c.example/cb"],"grant_types":["implicit"]}`, errInvalidClientMetadata},
		{"client credentials", `{"redirect_uris":["https://c.example/cb"],"grant_types":["authorization_code","client_credentials"]}`, errInvalidClientMetadata},
		{"refresh without code", `{"redirect_uris":["https://c.example/cb"],"grant_types":["refresh_token"]}`, errInvalidClientMetadata},
		{"token response type", `{"redirect_uris":["https://c.example/cb"],"response_types":["token"]}`, errInvalidClientMetadata},
		{"private_key_jwt", `{"redirect_uris":["https://c.example/cb"],"token_endpoint_auth_method":"private_key_jwt"}`, errInvalidClientMetadata},
		{"long name", `{"redirect_uris":["https://c.example/cb"],"client_name":"` + strings.Repeat("n", 201) + `"}`, errInvalidClientMetadata},
		{"bad scope", `{"redirect_uris":["https://c.example/cb"],"scope":"a  b"}`, errInvalidClientMetadata},
		{"not JSON", `redirect_uris=https://c.example/cb`, errInvalidClientMetadata},
		{"array", `[]`, errInvalidClientMetadata},
		{"trailing data", `{"redirect_uris":["https://c.example/cb"]} {}`, errInvalidClientMetadata},
		{"oversized", `{"redirect_uris":["https://c.example/cb"],"x":"` + strings.Repeat("a", maxBodyBytes) + `"}`, errInvalidClientMetadata},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wantOAuthError(t, postJSON(e, tc.body), http.StatusBadRequest, tc.code)
		})
	}
}

func TestRegister_RequiresJSONPost(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	req := httptest.NewRequest(http.MethodPost, issuer+paths.Register, strings.NewReader(`{"redirect_uris":["https://c.example/cb"]}`))
	req.Header.Set("Content-Type", "text/plain")
	wantOAuthError(t, e.do(req), http.StatusBadRequest, errInvalidClientMetadata)

	rec := e.get(issuer+paths.Register, "")
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET: status %d", rec.Code)
	}
}

func TestRegister_NameIsSanitised(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// A right-to-left override and control characters must not survive.
	rec := postJSON(e, `{"redirect_uris":["https://c.example/cb"],"client_name":"  Good\u202eliveB\u0007 "}`)
	if rec.Code != http.StatusCreated {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	var m map[string]any
	_ = json.Unmarshal(rec.Body.Bytes(), &m)
	if m["client_name"] != "GoodliveB" {
		t.Errorf("client_name = %q", m["client_name"])
	}
}

func TestRegister_UnusedRegistrationsExpireAndUseExtendsThem(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	unused := e.register(nil)
	used := e.register(nil)

	e.clock.Advance(20 * 24 * time.Hour)
	sess := e.newSession("alice")
	_, challenge := pkce()
	if rec := e.get(issuer+paths.Authorize+"?"+authParams(used, challenge).Encode(), sess.ID); rec.Code != http.StatusOK {
		t.Fatalf("authorize after 20 days: status %d", rec.Code)
	}
	e.clock.Advance(20 * 24 * time.Hour) // 40 days after registration, 20 after use
	for _, tc := range []struct {
		c    registered
		want int
	}{{used, http.StatusOK}, {unused, http.StatusBadRequest}} {
		sess := e.newSession("bob")
		rec := e.get(issuer+paths.Authorize+"?"+authParams(tc.c, challenge).Encode(), sess.ID)
		if rec.Code != tc.want {
			t.Errorf("client %s: status %d, want %d", tc.c.ID[:6], rec.Code, tc.want)
		}
	}
}
