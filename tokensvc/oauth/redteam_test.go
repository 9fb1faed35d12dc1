package oauth

// Red-team tests of the authorization server: each performs an attack and checks that it
// fails.

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/shared/paths"
)

// bigRegistration is about the largest client metadata the registration endpoint accepts:
// maxRedirectURIs redirect URIs filling the body limit.
func bigRegistration(i int) string {
	uris := make([]string, maxRedirectURIs)
	for j := range uris {
		uris[j] = "https://flood.example/" + strconv.Itoa(i) + "/" + strconv.Itoa(j) + "/" + strings.Repeat("a", min(maxRedirectURILen, (maxRegistrationBodyBytes-200)/maxRedirectURIs)-40)
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
// issued without a resource is valid at every MCP server route of the gateway
// (docs/architecture.md, rule 12): the user approved less than the client gets. The page must say what the token
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

// Attack (burn the victim's code): someone who has seen an authorization code — in a log,
// a Referer, a shared screen — but is not its client, or lacks the PKCE verifier, presents
// it anyway. The attempt must fail with invalid_grant and must not spend the code: its
// rightful client still redeems it.
func TestRedTeam_ForeignRedemptionDoesNotBurnTheCode(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	victim := e.register(nil)
	attacker := e.register(nil)
	sess := e.newSession("alice")
	cases := []struct {
		name   string
		attack func(code, verifier string) *httptest.ResponseRecorder
	}{
		{"attacker's verifier", func(code, _ string) *httptest.ResponseRecorder {
			v, _ := pkce()
			return e.token(victim, codeForm(victim, code, v))
		}},
		{"no verifier", func(code, _ string) *httptest.ResponseRecorder {
			f := codeForm(victim, code, "")
			f.Del("code_verifier")
			return e.token(victim, f)
		}},
		{"attacker's client", func(code, verifier string) *httptest.ResponseRecorder {
			return e.token(attacker, codeForm(victim, code, verifier))
		}},
		{"attacker's redirect URI", func(code, verifier string) *httptest.ResponseRecorder {
			f := codeForm(victim, code, verifier)
			f.Set("redirect_uri", "http://127.0.0.1:33418/other")
			return e.token(victim, f)
		}},
		{"another issuer", func(code, verifier string) *httptest.ResponseRecorder {
			f := codeForm(victim, code, verifier)
			f.Del("resource")
			return e.tokenAt(soloIssuer, victim, f)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, verifier := e.authorizeCode(victim, sess, nil)
			for range 3 {
				wantOAuthError(t, tc.attack(code, verifier), http.StatusBadRequest, errInvalidGrant)
			}
			tr := tokens(t, e.token(victim, codeForm(victim, code, verifier)))
			if _, err := e.srv.ValidateAccessToken(context.Background(), tr.AccessToken, resMain); err != nil {
				t.Fatalf("the rightful client's token: %v", err)
			}
			// Spent now: a replay still fails and revokes what the code produced.
			wantOAuthError(t, e.token(victim, codeForm(victim, code, verifier)), http.StatusBadRequest, errInvalidGrant)
			if _, err := e.srv.ValidateAccessToken(context.Background(), tr.AccessToken, resMain); err == nil {
				t.Error("the token of a replayed code is still valid")
			}
		})
	}
}

// Attack (burn the victim's consent): mallory learns alice's pending consent handle and
// posts it from her own session, or at another host. The answer is refused and alice's
// pending approval stays answerable.
func TestRedTeam_ForeignConsentAnswerDoesNotBurnTheRequest(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.register(nil)
	alice, mallory := e.newSession("alice"), e.newSession("mallory")
	_, challenge := pkce()
	cases := []struct {
		name   string
		attack func(handle string) *httptest.ResponseRecorder
		status int
	}{
		{"mallory's session", func(h string) *httptest.ResponseRecorder {
			return e.answerConsent(issuer, mallory.ID, h, actionApprove)
		}, http.StatusForbidden},
		{"mallory's session denies", func(h string) *httptest.ResponseRecorder {
			return e.answerConsent(issuer, mallory.ID, h, actionDeny)
		}, http.StatusForbidden},
		{"another host", func(h string) *httptest.ResponseRecorder {
			return e.answerConsent(soloIssuer, alice.ID, h, actionApprove)
		}, http.StatusForbidden},
		{"no action", func(h string) *httptest.ResponseRecorder {
			return e.answerConsent(issuer, alice.ID, h, "")
		}, http.StatusBadRequest},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			handle := consentHandle(t, e.get(issuer+paths.Authorize+"?"+authParams(c, challenge).Encode(), alice.ID))
			rec := tc.attack(handle)
			if rec.Code != tc.status || rec.Header().Get("Location") != "" {
				t.Fatalf("attack: status %d, Location %q", rec.Code, rec.Header().Get("Location"))
			}
			rec = e.answerConsent(issuer, alice.ID, handle, actionApprove)
			if rec.Code != http.StatusSeeOther || location(t, rec).Query().Get("code") == "" {
				t.Fatalf("alice's approval after the attack: status %d, Location %q", rec.Code, rec.Header().Get("Location"))
			}
			if rec := e.answerConsent(issuer, alice.ID, handle, actionApprove); rec.Code != http.StatusBadRequest {
				t.Fatalf("second approval: status %d", rec.Code)
			}
		})
	}
}

// Attack (open redirector): registration is anonymous, so an attacker registers
// https://evil.example/phish and links victims to the gateway's authorization endpoint with
// a request that fails before consent — implicit flow, no PKCE, prompt=none. The gateway
// must not send the browser to the attacker's URI (RFC 9700 §4.11.2) and prompt=none must
// not tell the attacker whether the victim is signed in: the user sees the gateway's error
// page, with the request ID, whatever the victim's state.
func TestRedTeam_AuthorizeErrorsBeforeConsentNeverRedirectToUnvettedClients(t *testing.T) {
	t.Parallel()
	d := newDocServer(t)
	e := newEnv(t, WithDocumentClient(loopbackDocClient(d, 0)))
	const phish = "https://evil.example/phish"
	dyn := e.register(map[string]any{"redirect_uris": []string{phish}})
	doc := registered{ID: d.base() + "/client.json", RedirectURI: loopbackCB}
	alice := e.newSession("alice")
	_, challenge := pkce()
	cases := []struct {
		name   string
		mutate func(url.Values)
	}{
		{"implicit flow", func(p url.Values) { p.Set("response_type", "token") }},
		{"no response_type", func(p url.Values) { p.Del("response_type") }},
		{"no PKCE", func(p url.Values) { p.Del("code_challenge"); p.Del("code_challenge_method") }},
		{"plain PKCE", func(p url.Values) { p.Set("code_challenge_method", "plain") }},
		{"foreign resource", func(p url.Values) { p.Set("resource", "https://evil.example/mcp") }},
		{"request object", func(p url.Values) { p.Set("request", "eyJ") }},
		{"malformed scope", func(p url.Values) { p.Set("scope", `a"b`) }},
		{"prompt=none", func(p url.Values) { p.Set("prompt", "none") }},
		{"prompt=none with implicit flow", func(p url.Values) { p.Set("prompt", "none"); p.Set("response_type", "token") }},
	}
	for _, client := range []struct {
		kind string
		c    registered
	}{{"registered client", dyn}, {"metadata document client", doc}} {
		for _, tc := range cases {
			for _, signedIn := range []bool{false, true} {
				name := client.kind + "/" + tc.name + "/signed out"
				sid := ""
				if signedIn {
					name, sid = client.kind+"/"+tc.name+"/signed in", alice.ID
				}
				t.Run(name, func(t *testing.T) {
					p := authParams(client.c, challenge)
					tc.mutate(p)
					req := httptest.NewRequest(http.MethodGet, issuer+paths.Authorize+"?"+p.Encode(), nil)
					if sid != "" {
						req.AddCookie(&http.Cookie{Name: testCookie, Value: sid})
					}
					req.Header.Set("X-Request-Id", "req-phish-1")
					rec := e.do(req)
					if loc := rec.Header().Get("Location"); loc != "" {
						t.Fatalf("status %d: the browser is sent to %s", rec.Code, loc)
					}
					if rec.Code != http.StatusBadRequest || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") {
						t.Fatalf("status %d, Content-Type %q, want the 400 error page", rec.Code, rec.Header().Get("Content-Type"))
					}
					body := rec.Body.String()
					if !strings.Contains(body, "req-phish-1") || strings.Contains(body, "evil.example") {
						t.Errorf("page must name the request ID and never the redirect target:\n%s", body)
					}
					if strings.Contains(body, "alice") {
						t.Errorf("page reveals who is signed in:\n%s", body)
					}
				})
			}
		}
	}
	// prompt=none answers alike whether or not the victim is signed in.
	p := authParams(dyn, challenge)
	p.Set("prompt", "none")
	out, in := e.get(issuer+paths.Authorize+"?"+p.Encode(), ""), e.get(issuer+paths.Authorize+"?"+p.Encode(), alice.ID)
	strip := func(s string) string {
		return regexp.MustCompile(`Request ID: <code>[^<]*</code>`).ReplaceAllString(s, "")
	}
	if out.Code != in.Code || strip(out.Body.String()) != strip(in.Body.String()) {
		t.Errorf("prompt=none tells signed in (%d) from signed out (%d)", in.Code, out.Code)
	}
}

// Once the user has approved a client (it holds a live grant of this browser session), the
// redirect URI was shown to and accepted by the user, so prompt=none behaves as OpenID
// Connect says: consent is still required (this server always asks), and that error goes
// back to the client. Errors after consent (the user denies) also go back to the client.
func TestAuthorize_PromptNoneRedirectsOnlyForAClientTheUserApproved(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.register(nil)
	alice, bob := e.newSession("alice"), e.newSession("bob")
	code, verifier := e.authorizeCode(c, alice, nil)
	tokens(t, e.token(c, codeForm(c, code, verifier)))
	_, challenge := pkce()
	p := authParams(c, challenge)
	p.Set("prompt", "none")

	rec := e.get(issuer+paths.Authorize+"?"+p.Encode(), alice.ID)
	if q := location(t, rec).Query(); q.Get("error") != errConsentRequired || q.Get("iss") != issuer || q.Get("state") != "st-123" {
		t.Fatalf("approved client, prompt=none: %v", q)
	}
	// Another user of the same client never approved it.
	if rec := e.get(issuer+paths.Authorize+"?"+p.Encode(), bob.ID); rec.Code != http.StatusBadRequest || rec.Header().Get("Location") != "" {
		t.Fatalf("bob, prompt=none: status %d Location %q", rec.Code, rec.Header().Get("Location"))
	}
	// An approval the user took back (sign-out revokes the session's grants) no longer counts.
	if _, err := e.st.RevokeGrantsBySession(context.Background(), alice.ID, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if rec := e.get(issuer+paths.Authorize+"?"+p.Encode(), alice.ID); rec.Code != http.StatusBadRequest || rec.Header().Get("Location") != "" {
		t.Fatalf("revoked approval, prompt=none: status %d Location %q", rec.Code, rec.Header().Get("Location"))
	}
	// The normal flow still ends at the client, and so does a denial after consent.
	p.Del("prompt")
	handle := consentHandle(t, e.get(issuer+paths.Authorize+"?"+p.Encode(), alice.ID))
	if q := location(t, e.answerConsent(issuer, alice.ID, handle, actionDeny)).Query(); q.Get("error") != errAccessDenied {
		t.Fatalf("deny: %v", q)
	}
}

// registerFrom posts a registration to origin as the caller at remote (a peer address),
// with X-Forwarded-For headers xff.
func registerFrom(e *env, origin, remote, body string, xff ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, origin+paths.Register, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.RemoteAddr = remote
	for _, v := range xff {
		req.Header.Add("X-Forwarded-For", v)
	}
	return e.do(req)
}

const smallRegistration = `{"redirect_uris":["` + loopbackCB + `"],"token_endpoint_auth_method":"none"}`

// Attack (lock everyone out): one anonymous caller floods the registration endpoint until
// it answers 429. Its budget ends, and only its own: a real client at another address, and
// the same flood at another route host, still register. Forging X-Forwarded-For (not
// trusted by default) or moving within one IPv6 /64 does not buy a fresh budget.
func TestRedTeam_OneCallerCannotShutRegistrationForEveryone(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		flood func(e *env, i int) *httptest.ResponseRecorder
	}{
		{"one address", func(e *env, _ int) *httptest.ResponseRecorder {
			return registerFrom(e, issuer, "203.0.113.7:4711", smallRegistration)
		}},
		{"forged X-Forwarded-For", func(e *env, i int) *httptest.ResponseRecorder {
			return registerFrom(e, issuer, "203.0.113.7:4711", smallRegistration, "198.51.100."+strconv.Itoa(i%250))
		}},
		{"addresses of one IPv6 /64", func(e *env, i int) *httptest.ResponseRecorder {
			return registerFrom(e, issuer, "[2001:db8:1:2::"+strconv.FormatInt(int64(i+1), 16)+"]:4711", smallRegistration)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			created := 0
			for i := range 400 {
				rec := tc.flood(e, i)
				switch rec.Code {
				case http.StatusCreated:
					created++
				case http.StatusTooManyRequests:
					if ra, err := strconv.Atoi(rec.Header().Get("Retry-After")); err != nil || ra < 1 {
						t.Fatalf("429 without a usable Retry-After: %q", rec.Header().Get("Retry-After"))
					}
					wantOAuthError(t, rec, http.StatusTooManyRequests, errTemporarilyUnavailable)
				default:
					t.Fatalf("registration %d: status %d: %s", i, rec.Code, rec.Body)
				}
			}
			for _, remote := range []string{"192.0.2.10:5555", "[2001:db8:9::1]:5555"} {
				if rec := registerFrom(e, issuer, remote, smallRegistration); rec.Code != http.StatusCreated {
					t.Fatalf("a real client at %s after the flood: status %d: %s", remote, rec.Code, rec.Body)
				}
			}
			if rec := registerFrom(e, soloIssuer, "192.0.2.11:5555", smallRegistration); rec.Code != http.StatusCreated {
				t.Fatalf("a real client at another host after the flood: status %d: %s", rec.Code, rec.Body)
			}
			if created > defaultCallerRegistrationBurst {
				t.Fatalf("one caller registered %d clients at once, want at most %d", created, defaultCallerRegistrationBurst)
			}
		})
	}
}

// Behind trusted proxies (token_service.trusted_proxy_hops), callers are told apart by the
// address the outermost proxy saw; what a caller writes to the left of it is ignored.
func TestRedTeam_TrustedProxyHopsCountTheRealCaller(t *testing.T) {
	t.Parallel()
	e := newEnv(t, WithTrustedProxyHops(1), WithCallerRegistrationLimit(0.001, 5, 100))
	proxy := "10.0.0.2:8080"
	for i := range 20 {
		rec := registerFrom(e, issuer, proxy, smallRegistration, "198.51.100."+strconv.Itoa(i)+", 203.0.113.7")
		if want := http.StatusCreated; i >= 5 {
			if rec.Code != http.StatusTooManyRequests {
				t.Fatalf("registration %d of one caller with forged entries: status %d", i, rec.Code)
			}
		} else if rec.Code != want {
			t.Fatalf("registration %d: status %d", i, rec.Code)
		}
	}
	if rec := registerFrom(e, issuer, proxy, smallRegistration, "203.0.113.8"); rec.Code != http.StatusCreated {
		t.Fatalf("another caller through the same proxy: status %d", rec.Code)
	}
}

// Attack (fill the store): registrations are anonymous and kept for 30 days, so their size
// is bounded: too many or too long redirect URIs, an overlong name or scope, or an
// oversized body are refused with the RFC 7591 error that names the problem.
func TestRedTeam_OversizedRegistrationIsRefused(t *testing.T) {
	t.Parallel()
	uris := func(n, length int) []string {
		out := make([]string, n)
		for i := range out {
			p := "https://client.example/" + strconv.Itoa(i) + "/"
			out[i] = p + strings.Repeat("a", length-len(p))
		}
		return out
	}
	reg := func(m map[string]any) string {
		if _, ok := m["redirect_uris"]; !ok {
			m["redirect_uris"] = []string{loopbackCB}
		}
		m["token_endpoint_auth_method"] = "none"
		b, _ := json.Marshal(m)
		return string(b)
	}
	cases := []struct {
		name, body, code, desc string
	}{
		{"eleven redirect URIs", reg(map[string]any{"redirect_uris": uris(11, 60)}), errInvalidRedirectURI, "at most 10 redirect_uris"},
		{"redirect URI of 2001 bytes", reg(map[string]any{"redirect_uris": uris(1, 2001)}), errInvalidRedirectURI, "longer than 2000 bytes"},
		{"client_name of 201 characters", reg(map[string]any{"client_name": strings.Repeat("é", 201)}), errInvalidClientMetadata, "client_name must be at most 200"},
		{"scope of 1001 bytes", reg(map[string]any{"scope": strings.Repeat("s", 1001)}), errInvalidClientMetadata, "scope is too long"},
		{"17 KiB body", reg(map[string]any{"logo_uri": "https://client.example/" + strings.Repeat("l", 17<<10)}), errInvalidClientMetadata, "larger than 16384 bytes"},
		{"17 KiB of redirect URIs", reg(map[string]any{"redirect_uris": uris(10, 1750)}), errInvalidClientMetadata, "larger than 16384 bytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			rec := postJSON(e, tc.body)
			wantOAuthError(t, rec, http.StatusBadRequest, tc.code)
			if !strings.Contains(rec.Body.String(), tc.desc) {
				t.Errorf("description does not say %q: %s", tc.desc, rec.Body)
			}
		})
	}
	// At the limits it is accepted.
	e := newEnv(t)
	body := reg(map[string]any{"redirect_uris": uris(10, 1500), "client_name": strings.Repeat("n", 200), "scope": "offline_access"})
	if rec := postJSON(e, body); rec.Code != http.StatusCreated {
		t.Fatalf("registration at the limits (%d bytes): status %d: %s", len(body), rec.Code, rec.Body)
	}
}
