package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"sync"
	"time"
)

// maxPageBytes bounds how much of a page the Browser reads.
const maxPageBytes = 1 << 20

// ErrNoRedirect is returned when the Browser ends on a page (not at the stop prefix) that it
// cannot act on: no form with the consent button, an error page, or too many steps.
var ErrNoRedirect = errors.New("browser did not reach the redirect URI")

// Browser is a headless user agent for authorization flows: it keeps cookies (one jar for all
// ports of a host, like a browser), follows redirects itself (303/302/301 become GET,
// 307/308 repeat the method and body), stops when a redirect points at a given URI prefix
// (an OAuth client's callback) without requesting it, and submits HTML forms.
//
// A Browser is safe for sequential use by one flow at a time; its History is safe to read
// concurrently.
type Browser struct {
	// Client sends the requests. NewBrowser sets a cookie jar and disables the client's own
	// redirect handling.
	Client *http.Client
	// MaxSteps bounds the requests of one Navigate, SubmitForm or Authorize call.
	MaxSteps int
	// ConsentButton is the submit control Authorize clicks on a consent page.
	ConsentButton FormButton

	mu      sync.Mutex
	history []string
}

// Page is a non-redirect response the Browser stopped at.
type Page struct {
	URL        *url.URL
	StatusCode int
	Header     http.Header
	Body       []byte
}

// Forms returns the page's HTML forms.
func (p *Page) Forms() ([]Form, error) {
	return ParseForms(p.Body, p.URL)
}

// NewBrowser returns a Browser with an empty cookie jar that clicks the button
// name="action" value="approve" on consent pages.
func NewBrowser() *Browser {
	jar, _ := cookiejar.New(nil) // cookiejar.New never fails without options
	return &Browser{
		Client: &http.Client{
			Jar:     jar,
			Timeout: 30 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse
			},
		},
		MaxSteps:      30,
		ConsentButton: FormButton{Name: "action", Value: "approve"},
	}
}

// History returns "METHOD URL -> STATUS" for every request made so far, for test logs.
func (b *Browser) History() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.history...)
}

func (b *Browser) record(s string) {
	b.mu.Lock()
	b.history = append(b.history, s)
	b.mu.Unlock()
}

// Navigate GETs rawURL and follows redirects. If a redirect's target starts with stopPrefix
// (non-empty), it returns that target without requesting it; otherwise it returns the first
// non-redirect response as a Page.
func (b *Browser) Navigate(ctx context.Context, rawURL, stopPrefix string) (*url.URL, *Page, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, nil, fmt.Errorf("browser: parse %q: %w", rawURL, err)
	}
	if stopPrefix != "" && strings.HasPrefix(u.String(), stopPrefix) {
		return u, nil, nil
	}
	return b.do(ctx, http.MethodGet, u, nil, stopPrefix)
}

// SubmitForm submits form as if button were clicked (nil: no button, like a script's
// form.submit()) and follows redirects as Navigate does.
func (b *Browser) SubmitForm(ctx context.Context, form *Form, button *FormButton, stopPrefix string) (*url.URL, *Page, error) {
	values := form.Values(button)
	if form.Method == http.MethodGet {
		u := *form.Action
		u.RawQuery = values.Encode()
		return b.do(ctx, http.MethodGet, &u, nil, stopPrefix)
	}
	return b.do(ctx, http.MethodPost, form.Action, []byte(values.Encode()), stopPrefix)
}

// Authorize opens an authorization URL and returns the redirect to redirectPrefix (the
// client's redirect URI, carrying code and state, or error). On the way it submits consent
// forms by clicking b.ConsentButton, and submits button-less forms (response_mode=form_post
// pages) as a script would. Reaching any other page is an error wrapping ErrNoRedirect.
func (b *Browser) Authorize(ctx context.Context, authURL, redirectPrefix string) (*url.URL, error) {
	if redirectPrefix == "" {
		return nil, errors.New("browser: empty redirect prefix")
	}
	stop, page, err := b.Navigate(ctx, authURL, redirectPrefix)
	for forms := 0; err == nil && stop == nil; forms++ {
		if forms >= 5 {
			return nil, fmt.Errorf("%w: more than 5 forms, last page %s", ErrNoRedirect, page.URL)
		}
		if page.StatusCode >= 400 {
			return nil, fmt.Errorf("%w: %s answered %d: %s", ErrNoRedirect, page.URL, page.StatusCode, snippet(page.Body))
		}
		fs, perr := page.Forms()
		if perr != nil {
			return nil, fmt.Errorf("browser: %s: %w", page.URL, perr)
		}
		form, button := b.pickForm(fs)
		if form == nil {
			return nil, fmt.Errorf("%w: page %s (%d) has no form to submit: %s", ErrNoRedirect, page.URL, page.StatusCode, snippet(page.Body))
		}
		stop, page, err = b.SubmitForm(ctx, form, button, redirectPrefix)
	}
	if err != nil {
		return nil, err
	}
	return stop, nil
}

// pickForm chooses the form holding the consent button, else the only button-less form.
func (b *Browser) pickForm(fs []Form) (*Form, *FormButton) {
	for i := range fs {
		if btn, ok := fs[i].Button(b.ConsentButton.Name, b.ConsentButton.Value); ok {
			return &fs[i], &btn
		}
	}
	if len(fs) == 1 && len(fs[0].Buttons) == 0 {
		return &fs[0], nil
	}
	return nil, nil
}

func (b *Browser) do(ctx context.Context, method string, u *url.URL, body []byte, stopPrefix string) (*url.URL, *Page, error) {
	maxSteps := b.MaxSteps
	if maxSteps <= 0 {
		maxSteps = 30
	}
	for step := 0; step < maxSteps; step++ {
		var rd io.Reader
		if body != nil {
			rd = strings.NewReader(string(body))
		}
		req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
		if err != nil {
			return nil, nil, fmt.Errorf("browser: build %s %s: %w", method, u, err)
		}
		req.Header.Set("Accept", "text/html,application/xhtml+xml,*/*;q=0.8")
		req.Header.Set("User-Agent", "gateway-e2e-browser/1")
		if body != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		resp, err := b.Client.Do(req)
		if err != nil {
			b.record(method + " " + u.String() + " -> " + err.Error())
			return nil, nil, fmt.Errorf("browser: %s %s: %w", method, u, err)
		}
		data, err := io.ReadAll(io.LimitReader(resp.Body, maxPageBytes))
		resp.Body.Close()
		b.record(fmt.Sprintf("%s %s -> %d", method, u, resp.StatusCode))
		if err != nil {
			return nil, nil, fmt.Errorf("browser: read %s: %w", u, err)
		}
		switch resp.StatusCode {
		case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
			http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		default:
			return nil, &Page{URL: u, StatusCode: resp.StatusCode, Header: resp.Header, Body: data}, nil
		}
		loc := resp.Header.Get("Location")
		if loc == "" {
			return nil, nil, fmt.Errorf("browser: %s %s: %d without Location", method, u, resp.StatusCode)
		}
		next, err := u.Parse(loc)
		if err != nil {
			return nil, nil, fmt.Errorf("browser: %s %s: bad Location %q: %w", method, u, loc, err)
		}
		if next.Scheme != "http" && next.Scheme != "https" {
			if stopPrefix != "" && strings.HasPrefix(next.String(), stopPrefix) {
				return next, nil, nil
			}
			return nil, nil, fmt.Errorf("browser: redirect to non-HTTP URL %q", next.Redacted())
		}
		if stopPrefix != "" && strings.HasPrefix(next.String(), stopPrefix) {
			return next, nil, nil
		}
		if resp.StatusCode != http.StatusTemporaryRedirect && resp.StatusCode != http.StatusPermanentRedirect {
			method, body = http.MethodGet, nil
		}
		u = next
	}
	return nil, nil, fmt.Errorf("%w: more than %d requests, last %s", ErrNoRedirect, maxSteps, u)
}

// snippet returns the start of a body for error messages.
func snippet(b []byte) string {
	const n = 300
	s := strings.TrimSpace(string(b))
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}
