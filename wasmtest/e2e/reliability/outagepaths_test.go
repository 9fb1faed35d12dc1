package reliability

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/tokensvc/reqid"
	"github.com/mcpmesh/gateway/tokensvc/store/postgres/pgtest"
	"github.com/mcpmesh/gateway/wasmtest/e2e/harness"
)

// hookTransport calls before for every request a browser sends.
type hookTransport struct {
	before func(*http.Request)
	next   http.RoundTripper
}

func (h hookTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	h.before(r)
	return h.next.RoundTrip(r)
}

// browserSignIn runs an MCP client's authorization flow in a browser whose requests pass
// through before, up to the redirect to the client (then it returns the code and the PKCE
// verifier) or the first error page, which it returns.
func browserSignIn(ctx context.Context, s *rstack, c *client, before func(*http.Request)) (code, verifier string, page *harness.Page, hist []string) {
	b := harness.NewBrowser()
	b.Client.Transport = hookTransport{before: before, next: http.DefaultTransport}
	verifier = oauth2.GenerateVerifier()
	authURL := c.Config.AuthCodeURL("st", oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", s.MCPURL))
	stop, page, err := b.Navigate(ctx, authURL, redirectURI)
	for forms := 0; err == nil && stop == nil && page.StatusCode < 400 && forms < 5; forms++ {
		fs, ferr := page.Forms()
		if ferr != nil || len(fs) == 0 {
			break
		}
		form := &fs[0]
		var button *harness.FormButton
		if btn, ok := form.Button(b.ConsentButton.Name, b.ConsentButton.Value); ok {
			button = &btn
		}
		stop, page, err = b.SubmitForm(ctx, form, button, redirectURI)
	}
	if err != nil {
		return err.Error(), "", nil, b.History()
	}
	if stop != nil {
		return stop.Query().Get("code"), verifier, nil, b.History()
	}
	return "", "", page, b.History()
}

// pathsOnly shortens a browser's history ("GET URL -> status") to paths and statuses: the
// queries carry states and codes.
func pathsOnly(hist []string) []string {
	out := make([]string, 0, len(hist))
	for _, h := range hist {
		method, rest, _ := strings.Cut(h, " ")
		target, status, _ := strings.Cut(rest, " -> ")
		if u, err := url.Parse(target); err == nil {
			target = u.Path
		}
		out = append(out, method+" "+target+" "+status)
	}
	return out
}

var requestIDOnPage = regexp.MustCompile(`Request ID: <code>([^<]+)</code>`)

// TestPostgresOutage_BrowserSignIn signs a user in through a browser (an MCP client's
// authorization flow: the gateway's authorize endpoint, the sign-in at the OpenID provider,
// its callback, the hand-off) while the token service's database is cut: once from the
// start, once just as the browser comes back from the provider. The browser must get a 503
// page naming a request ID (the one in X-Request-Id), never a code or a 500; after the
// restore the same client signs in and calls a tool.
func TestPostgresOutage_BrowserSignIn(t *testing.T) {
	direct := pgtest.DSN(t)
	pg := harness.StartFaultProxy(t, pgTarget(t, direct))
	s := startStack(t, stackOptions{Storage: fmt.Sprintf("{type: postgres, dsn: %q}", withHost(direct, pg.Addr()))})
	c := s.signIn(t) // registered and signed in once: the flow works
	before := countRecords(t, direct)
	for _, stage := range []struct {
		name string
		cut  func(r *http.Request) bool
	}{
		{"from the start", func(*http.Request) bool { return true }},
		{"at the provider's callback", func(r *http.Request) bool { return r.URL.Path == paths.IDPCallback }},
	} {
		t.Run(stage.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			var cut atomic.Bool
			_, _, page, hist := browserSignIn(ctx, s, c, func(r *http.Request) {
				if !cut.Load() && stage.cut(r) {
					cut.Store(true)
					pg.Cut()
				}
			})
			pg.Restore()
			tl := newTally("browser sign-in with the database cut " + stage.name)
			switch {
			case page == nil:
				tl.add(http.StatusOK, 0, true)
				t.Fatalf("sign-in during the outage ended without an error page; browser: %v", pathsOnly(hist))
			case page.StatusCode != http.StatusServiceUnavailable:
				tl.add(page.StatusCode, 0, false)
				t.Errorf("sign-in during the outage: %d, want 503; browser: %v\n%s", page.StatusCode, pathsOnly(hist), page.Body)
			default:
				tl.add(page.StatusCode, 0, false)
			}
			id := page.Header.Get(reqid.Header)
			m := requestIDOnPage.FindSubmatch(page.Body)
			if id == "" || m == nil || string(m[1]) != id {
				t.Errorf("the error page names request ID %q, the answer's %s is %q", m, reqid.Header, id)
			}
			if !strings.Contains(string(page.Body), "Try again") && !strings.Contains(string(page.Body), "try again") {
				t.Errorf("the error page does not tell the user to try again:\n%s", page.Body)
			}
			report(t, tl)
			t.Logf("RELIABILITY %s: browser: %s", t.Name(), strings.Join(pathsOnly(hist), " → "))

			if got := countRecords(t, direct); got != before {
				t.Errorf("records after the failed sign-in: %s, want %s", got, before)
			}

			// After the restore the same client signs in again and calls a tool.
			code, verifier, page, hist := browserSignIn(ctx, s, c, func(*http.Request) {})
			if page != nil || code == "" {
				t.Fatalf("sign-in after the restore: %v; browser: %v", page, pathsOnly(hist))
			}
			tok, err := c.Config.Exchange(context.WithValue(ctx, oauth2.HTTPClient, httpClient), code,
				oauth2.VerifierOption(verifier), oauth2.SetAuthURLParam("resource", s.MCPURL))
			if err != nil {
				t.Fatalf("token after the restore: %v", err)
			}
			if st := mcp(s.MCPURL, tok.AccessToken); st != http.StatusOK {
				t.Errorf("tool call after the restore: %d", st)
			}
			before = countRecords(t, direct)
		})
	}
}

// upCall sends a tool call on the upstream_oauth2 route and returns the status and the
// Internal Token the MCP server received ("" when none reached it).
func (s *rstack) upCall(token string) (int, string) {
	s.UpBearer.Store(new(string))
	st := mcp(s.UpURL, token)
	return st, strings.TrimPrefix(*s.UpBearer.Load(), "Bearer ")
}

// TestPostgresOutage_InternalToken exercises the Internal Token (TI) path of an
// upstream_oauth2 route — the check refreshes the user's TI at the upstream OAuth server
// before it expires — with the token service's database cut. The upstream server rotates its
// refresh tokens, and its TIs live 63 s: each is due for refresh 1 s after it was issued
// (upstream.RefreshMargin is 60 s, and a TI due within 2 s counts as due), a check answer
// carrying it is cached 3 s, and the next check refreshes it.
//
//   - Cut while a TI is due: requests are 503 (never 401, which would send the user through
//     the upstream connect again); after the restore the next request refreshes the TI.
//   - Cut between the upstream's answer to a refresh and the token service storing it: the
//     upstream has spent the old refresh token, so the new one must not be lost. After the
//     restore the requests go on with the new TI and, under make reliability, for 40 s more
//     (past the refresh lease, 30 s), with the TI refreshed again and never a 401.
func TestPostgresOutage_InternalToken(t *testing.T) {
	direct := pgtest.DSN(t)
	pg := harness.StartFaultProxy(t, pgTarget(t, direct))
	s := startStack(t, stackOptions{Storage: fmt.Sprintf("{type: postgres, dsn: %q}", withHost(direct, pg.Addr())),
		Upstream: true, UpstreamTokenTTL: 63 * time.Second})
	c := s.signInTo(t, s.UpURL)
	tok := c.Token.AccessToken
	st, ti := s.upCall(tok)
	if st != http.StatusOK || ti == "" || ti == tok {
		t.Fatalf("tool call on the upstream route: %d, TI %t", st, ti != "")
	}
	before := countRecords(t, direct)

	// The TI is due, and the answer carrying it no longer cached, 3 s after it was issued.
	time.Sleep(3500 * time.Millisecond)
	due := newTally("TI due for refresh, database cut")
	pg.Cut()
	for range scale(10, 40) {
		start := time.Now()
		st, _ := s.upCall(tok)
		due.add(st, time.Since(start), st == http.StatusOK)
		if st != http.StatusServiceUnavailable {
			t.Errorf("request on the upstream route with the database cut: %d, want 503", st)
		}
	}
	pg.Restore()
	// After the restore every request passes, and soon one carries a refreshed TI (the
	// first refresh may fail on a pooled connection the cut left dead: the request then
	// goes on with the old, still valid, TI).
	after := newTally("TI due for refresh, after the restore")
	var ti2 string
	for end := time.Now().Add(10 * time.Second); ti2 == "" || ti2 == ti; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("the TI was not refreshed within 10 s of the restore")
		}
		start := time.Now()
		var st int
		st, ti2 = s.upCall(tok)
		after.add(st, time.Since(start), false)
		if st != http.StatusOK {
			t.Fatalf("after the restore: %d, want 200", st)
		}
	}
	report(t, due, after)

	// Cut between the upstream's answer to the refresh and the store.
	time.Sleep(3500 * time.Millisecond)
	var cut atomic.Bool
	hook := func(form url.Values) {
		if form.Get("grant_type") == "refresh_token" && cut.CompareAndSwap(false, true) {
			pg.Cut()
		}
	}
	s.UpTokenHook.Store(&hook)
	mid := newTally("database cut during the TI refresh")
	start := time.Now()
	st, ti3 := s.upCall(tok)
	mid.add(st, time.Since(start), false)
	if !cut.Load() {
		t.Fatalf("the TI was not refreshed (status %d)", st)
	}
	if st != http.StatusOK && st != http.StatusServiceUnavailable {
		t.Errorf("the request whose TI refresh lost the database: %d, want 200 or 503", st)
	}
	for range 5 {
		start = time.Now()
		st, _ := s.upCall(tok)
		mid.add(st, time.Since(start), false)
		if st != http.StatusServiceUnavailable && st != http.StatusOK {
			t.Errorf("request on the upstream route with the database cut: %d, want 503", st)
		}
	}
	pg.Restore()
	s.UpTokenHook.Store(nil)
	restored := newTally("after the restore (TI refresh interrupted)")
	seen := map[string]bool{ti: true, ti2: true, ti3: true}
	refreshed := false
	wait := time.Duration(scale(3, 40)) * time.Second
	for end := time.Now().Add(wait); time.Now().Before(end) || !refreshed; time.Sleep(250 * time.Millisecond) {
		if time.Since(end) > 30*time.Second {
			t.Fatalf("the TI was not refreshed after the restore")
		}
		start = time.Now()
		st, tiN := s.upCall(tok)
		restored.add(st, time.Since(start), false)
		if st != http.StatusOK {
			t.Fatalf("request on the upstream route after the restore: %d, want 200", st)
		}
		if !seen[tiN] {
			seen[tiN], refreshed = true, true
		}
	}
	report(t, mid, restored)
	t.Logf("RELIABILITY %s: %d distinct TIs reached the MCP server", t.Name(), len(seen))
	if got := countRecords(t, direct); got != before {
		t.Errorf("records after the outage: %s, want %s", got, before)
	}
}
