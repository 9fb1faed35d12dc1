package oauth

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/mcpmesh/gateway/shared/paths"
)

// BenchmarkToken_RefreshGrant measures one refresh_token grant through the
// whole endpoint (hosts middleware, form parsing, client authentication,
// rotation, access token creation, JSON response) on the memory store.
// Figures for the SQLite and PostgreSQL stores are added by the integrator.
func BenchmarkToken_RefreshGrant(b *testing.B) {
	for _, method := range []string{authNone, authSecretBasic} {
		b.Run(method, func(b *testing.B) {
			e := newEnv(b)
			c := e.register(map[string]any{"token_endpoint_auth_method": method})
			_, tr := e.fullFlow(c, "alice")
			rt := tr.RefreshToken
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "resource": {resMain}}
				if method == authNone {
					form.Set("client_id", c.ID)
				}
				req := httptest.NewRequest(http.MethodPost, issuer+paths.Token, strings.NewReader(form.Encode()))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				if method == authSecretBasic {
					req.SetBasicAuth(c.ID, c.Secret)
				}
				rec := httptest.NewRecorder()
				e.handler.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("status %d: %s", rec.Code, rec.Body)
				}
				var resp tokenResponse
				if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil {
					b.Fatal(err)
				}
				rt = resp.RefreshToken
			}
		})
	}
}
