package oauth

// Red-team tests of the authorization server: each performs an attack and checks that it
// fails.

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/shared/paths"
)

// bigRegistration is the largest client metadata the registration endpoint accepts: 20
// redirect URIs of about 2000 bytes each (~40 KB stored per client).
func bigRegistration(i int) string {
	uris := make([]string, maxRedirectURIs)
	for j := range uris {
		uris[j] = "https://flood.example/" + strconv.Itoa(i) + "/" + strconv.Itoa(j) + "/" + strings.Repeat("a", maxRedirectURILen-40)
	}
	b, _ := json.Marshal(map[string]any{"client_name": "flood", "redirect_uris": uris, "token_endpoint_auth_method": "none"})
	return string(b)
}

// Attack: an anonymous client floods the open registration endpoint with maximal
// registrations, each stored for 30 days, to fill the database. Registration must be rate
// limited (per replica), answer 429 with Retry-After when the budget is spent, and recover
// as time passes.
func TestRedTeam_RegistrationFloodIsRateLimited(t *testing.T) {
	t.Parallel()
	e := newEnv(t, WithRegistrationLimit(1, 10))
	created, limited := 0, 0
	for i := range 200 {
		rec := postJSON(e, bigRegistration(i))
		switch rec.Code {
		case http.StatusCreated:
			created++
		case http.StatusTooManyRequests:
			limited++
			if ra, err := strconv.Atoi(rec.Header().Get("Retry-After")); err != nil || ra < 1 {
				t.Fatalf("429 without a usable Retry-After: %q", rec.Header().Get("Retry-After"))
			}
			wantOAuthError(t, rec, http.StatusTooManyRequests, errTemporarilyUnavailable)
		default:
			t.Fatalf("registration %d: status %d: %s", i, rec.Code, rec.Body)
		}
	}
	if created != 10 || limited != 190 {
		t.Fatalf("created %d, refused %d: want the burst of 10 then 429", created, limited)
	}
	// The budget refills with time.
	e.clock.Advance(3 * time.Second)
	if rec := postJSON(e, bigRegistration(1000)); rec.Code != http.StatusCreated {
		t.Fatalf("after waiting: status %d", rec.Code)
	}
}

// The default limit lets a normal burst of registrations through (every test of this
// package, and a fleet of clients starting at once) while bounding a flood.
func TestRedTeam_DefaultRegistrationLimitIsBounded(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	created := 0
	for i := range 1000 {
		rec := postJSON(e, `{"redirect_uris":["`+loopbackCB+`"],"token_endpoint_auth_method":"none"}`)
		if rec.Code == http.StatusCreated {
			created++
		} else if rec.Code != http.StatusTooManyRequests {
			t.Fatalf("registration %d: status %d", i, rec.Code)
		}
	}
	if created < 50 || created > defaultRegistrationBurst {
		t.Fatalf("%d of 1000 instant registrations accepted, want between 50 and %d", created, defaultRegistrationBurst)
	}
}

// Attack (confused consent): a client asks for no resource at one route host. The consent
// page said the application would act "on the MCP servers of" that host, but a token
// issued without a resource is valid at every MCP server route of the gateway (DESIGN
// §2.9): the user approved less than the client gets. The page must say what the token
// will be good for.
func TestRedTeam_ConsentForAnUnboundTokenSaysEveryServerOfTheGateway(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.register(nil)
	sess := e.newSession("alice")
	_, challenge := pkce()
	p := authParams(c, challenge)
	p.Del("resource")
	body := e.get(soloIssuer+paths.Authorize+"?"+p.Encode(), sess.ID).Body.String()
	if strings.Contains(body, "on the MCP servers of <strong>"+soloIssuer+"</strong>") || !strings.Contains(body, "every MCP server of this gateway") {
		t.Errorf("consent page for an unbound token understates its reach:\n%s", body)
	}
	// Why: the token approved at solo.example.com works on mcp.example.com.
	code, verifier := e.authorizeCodeAt(soloIssuer, c, sess, url.Values{"resource": nil})
	f := codeForm(c, code, verifier)
	f.Del("resource")
	tr := tokens(t, e.tokenAt(soloIssuer, c, f))
	if _, err := e.srv.ValidateAccessToken(context.Background(), tr.AccessToken, resMain); err != nil {
		t.Fatalf("unbound token from %s refused at %s: %v", soloIssuer, resMain, err)
	}
	// A request for one server still names that server and its host.
	p.Set("resource", resSolo)
	body = e.get(soloIssuer+paths.Authorize+"?"+p.Encode(), sess.ID).Body.String()
	if !strings.Contains(body, "on the MCP servers of <strong>"+soloIssuer+"</strong>") || !strings.Contains(body, resSolo) {
		t.Errorf("consent page for a bound token:\n%s", body)
	}
}
