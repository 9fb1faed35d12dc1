package oauth

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcpmesh/gateway/shared/paths"
)

func TestRegister_ApplicationType(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cases := []struct {
		name   string
		meta   map[string]any
		status int
		want   string // error description fragment, or the echoed application_type
	}{
		{"web with https", map[string]any{"application_type": "web", "redirect_uris": []string{"https://app.example/cb"}}, 201, "web"},
		{"web with loopback http", map[string]any{"application_type": "web", "redirect_uris": []string{loopbackCB}}, 201, "web"},
		{"web with an app scheme", map[string]any{"application_type": "web", "redirect_uris": []string{"com.example.app:/cb"}}, 400, "web application's redirect URIs must be https"},
		{"native with loopback and an app scheme", map[string]any{"application_type": "native", "redirect_uris": []string{loopbackCB, "cursor://anysphere.cursor/cb"}}, 201, "native"},
		{"native with a remote https URI", map[string]any{"application_type": "native", "redirect_uris": []string{"https://app.example/cb"}}, 400, "native application's redirect URIs"},
		{"unknown type", map[string]any{"application_type": "desktop", "redirect_uris": []string{loopbackCB}}, 400, "application_type must be web or native"},
		{"none named keeps the general rule", map[string]any{"redirect_uris": []string{"com.example.app:/cb", "https://app.example/cb"}}, 201, ""},
		{"private_key_jwt is for metadata documents", map[string]any{"token_endpoint_auth_method": "private_key_jwt", "jwks_uri": "https://app.example/jwks.json"}, 400, "client ID metadata document"},
		{"keys by value", map[string]any{"token_endpoint_auth_method": "none", "jwks": map[string]any{"keys": []any{}}}, 400, "jwks (keys by value) is not supported"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := map[string]any{"redirect_uris": []string{loopbackCB}, "token_endpoint_auth_method": "none"}
			for k, v := range tc.meta {
				body[k] = v
			}
			b, _ := json.Marshal(body)
			req := httptest.NewRequest(http.MethodPost, issuer+paths.Register, strings.NewReader(string(b)))
			req.Header.Set("Content-Type", "application/json")
			rec := e.do(req)
			if rec.Code != tc.status {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			var m map[string]any
			_ = json.Unmarshal(rec.Body.Bytes(), &m)
			if tc.status == 201 {
				if got, _ := m["application_type"].(string); got != tc.want {
					t.Errorf("application_type %q, want %q", got, tc.want)
				}
				return
			}
			if d, _ := m["error_description"].(string); !strings.Contains(d, tc.want) {
				t.Errorf("error_description %q, want %q", d, tc.want)
			}
		})
	}
}
