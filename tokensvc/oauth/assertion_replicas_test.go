package oauth

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/mcpmesh/gateway/shared/paths"
)

// A client assertion is spent across replicas: sent to two replicas sharing one database at
// once, it authenticates exactly one request.
func TestRedTeam_Replicas_ClientAssertionIsSingleUse(t *testing.T) {
	forBackends(t, func(t *testing.T, r *replicas) {
		d := newKeyDocServer(t)
		key := newSigningKey(t, "k1")
		d.publish(key.public())
		for _, e := range []*env{r.a, r.b} {
			e.srv.docs = newDocumentResolver(d.client(), e.srv.now, e.srv.log, defaultDocumentCacheSize)
			e.srv.jwks = newJWKSCache(d.client(), e.srv.now, e.srv.log, defaultJWKSCacheSize)
		}
		id := d.base() + "/client.json"
		c := claimsFor(r.a, id)
		c.Audience = jwt.Audience{issuer + paths.Revoke}
		a := key.assertion(t, c)
		ok, others := race(6, func(i int) int {
			e := r.a
			if i%2 == 1 {
				e = r.b
			}
			return e.postForm(issuer+paths.Revoke, assertionForm(url.Values{"token": {"t"}}, a), "").Code
		})
		for _, code := range others {
			if code != http.StatusUnauthorized {
				t.Errorf("status %d", code)
			}
		}
		if ok != 1 {
			t.Fatalf("%d requests authenticated with one assertion across replicas, want 1", ok)
		}
	})
}
