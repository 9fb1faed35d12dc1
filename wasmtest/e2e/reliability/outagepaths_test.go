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
			code, _, page, hist := browserSignIn(ctx, s, c, func(r *http.Request) {
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
