// The upstream provider's token endpoint: the authorization-code exchange and the refresh,
// bounded in time and size, without redirects, with errors that name the endpoint, the HTTP
// status and a registered OAuth error code, never the body or a secret.

package upstream

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Bounds of every call to an upstream token endpoint.
const (
	// CallTimeout bounds one call, connection to last byte.
	CallTimeout = 10 * time.Second
	// MaxResponseBytes bounds the response body read.
	MaxResponseBytes = 64 << 10
	// maxTokenLen bounds an access or refresh token taken from a response.
	maxTokenLen = 16 << 10
	// maxExpiresIn caps expires_in (ten years).
	maxExpiresIn = 10 * 365 * 24 * 3600
)

// ErrInvalidGrant means the upstream refused the grant (RFC 6749 error invalid_grant): the
// refresh token or code is expired, revoked or spent.
var ErrInvalidGrant = errors.New("upstream: invalid_grant")

// registeredErrors are the OAuth error codes of RFC 6749 §5.2 and §4.1.2.1; only these are
// logged or shown. Any other value a provider sends is reported as "unregistered", so that a
// hostile provider cannot put words (or our secrets) into logs and pages.
var registeredErrors = map[string]bool{
	"invalid_request": true, "invalid_client": true, "invalid_grant": true,
	"unauthorized_client": true, "unsupported_grant_type": true, "invalid_scope": true,
	"access_denied": true, "unsupported_response_type": true, "server_error": true,
	"temporarily_unavailable": true,
}

// RegisteredError returns code when it is a registered OAuth error code, else "unregistered".
func RegisteredError(code string) string {
	if registeredErrors[code] {
		return code
	}
	return "unregistered"
}

// TokenError is a failed call to an upstream token endpoint. Its text names the endpoint
// (without query), the HTTP status and the registered OAuth error code: nothing the provider
// chose freely, nothing secret.
type TokenError struct {
	Endpoint string // token URL without query or fragment
	Status   int    // 0 when no response arrived
	Code     string // registered OAuth error code, "unregistered", or ""
	Reason   string // what went wrong, in our words
}

func (e *TokenError) Error() string {
	var b strings.Builder
	b.WriteString("upstream token endpoint ")
	b.WriteString(e.Endpoint)
	if e.Status != 0 {
		b.WriteString(": status ")
		b.WriteString(strconv.Itoa(e.Status))
	}
	if e.Code != "" {
		b.WriteString(": error ")
		b.WriteString(e.Code)
	}
	if e.Reason != "" {
		b.WriteString(": ")
		b.WriteString(e.Reason)
	}
	return b.String()
}

// Is makes errors.Is(err, ErrInvalidGrant) true for an invalid_grant answer.
func (e *TokenError) Is(target error) bool {
	return target == ErrInvalidGrant && e.Code == "invalid_grant"
}

// Token is an Internal Token as the provider issued it (the sealed plaintext of a stored TI).
type Token struct {
	AccessToken  string    `json:"access_token"`
	TokenType    string    `json:"token_type,omitempty"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"` // zero: the provider did not say
	Scope        string    `json:"scope,omitempty"`
	// Issuer is the discovered authorization server that issued the token (upstream_discovery
	// routes): its refresh token goes to no other.
	Issuer string `json:"iss,omitempty"`
}

// ParseTokenResponse reads a token endpoint's answer: a JSON object (or, from providers that
// ignore Accept, a form-encoded body) with access_token, token_type bearer (or none),
// expires_in, refresh_token and scope. An answer with an error member, or any status but
// 200, is a *TokenError.
func ParseTokenResponse(endpoint string, status int, contentType string, body []byte, now time.Time) (Token, error) {
	fail := func(code, reason string) (Token, error) {
		return Token{}, &TokenError{Endpoint: endpoint, Status: status, Code: code, Reason: reason}
	}
	fields, ok := decodeTokenBody(contentType, body)
	if !ok {
		if status != http.StatusOK {
			return fail("", "")
		}
		return fail("", "the response is not a JSON object")
	}
	if e, ok := fields["error"]; ok {
		code, _ := e.(string)
		return fail(RegisteredError(code), "")
	}
	if status != http.StatusOK {
		return fail("", "")
	}
	var t Token
	var bad string
	t.AccessToken, bad = tokenField(fields, "access_token", true)
	if bad != "" {
		return fail("", bad)
	}
	t.RefreshToken, bad = tokenField(fields, "refresh_token", false)
	if bad != "" {
		return fail("", bad)
	}
	if v, ok := fields["token_type"]; ok {
		tt, _ := v.(string)
		if !strings.EqualFold(tt, "bearer") {
			return fail("", "token_type is not bearer")
		}
		t.TokenType = "Bearer"
	}
	if v, ok := fields["scope"]; ok {
		sc, _ := v.(string)
		if len(sc) > maxTokenLen || !printable(sc, true) {
			return fail("", "scope is malformed")
		}
		t.Scope = sc
	}
	if v, ok := fields["expires_in"]; ok && v != nil {
		n, ok := seconds(v)
		if !ok {
			return fail("", "expires_in is not a number of seconds")
		}
		if n > 0 {
			t.Expiry = now.Add(time.Duration(min(n, maxExpiresIn)) * time.Second)
		}
	}
	return t, nil
}

// decodeTokenBody returns the members of a JSON object body, or of a form-encoded one.
func decodeTokenBody(contentType string, body []byte) (map[string]any, bool) {
	mt, _, _ := mime.ParseMediaType(contentType)
	if mt == "application/x-www-form-urlencoded" || mt == "text/plain" {
		vals, err := url.ParseQuery(string(body))
		if err != nil {
			return nil, false
		}
		out := map[string]any{}
		for k, v := range vals {
			if len(v) != 1 {
				return nil, false
			}
			out[k] = v[0]
		}
		return out, len(out) > 0
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var out map[string]any
	if err := dec.Decode(&out); err != nil || out == nil {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false
	}
	return out, true
}

// tokenField returns a token member: a non-empty string of visible ASCII, bounded.
func tokenField(fields map[string]any, name string, required bool) (string, string) {
	v, ok := fields[name]
	if !ok || v == nil {
		if required {
			return "", name + " is missing"
		}
		return "", ""
	}
	s, ok := v.(string)
	if !ok || s == "" {
		if !required && ok {
			return "", ""
		}
		return "", name + " is not a string"
	}
	if len(s) > maxTokenLen || !printable(s, false) {
		return "", name + " is malformed"
	}
	return s, ""
}

// seconds reads expires_in: a JSON number or a numeric string of whole seconds.
func seconds(v any) (int64, bool) {
	var s string
	switch v := v.(type) {
	case json.Number:
		s = v.String()
	case string:
		s = v
	default:
		return 0, false
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && f >= 0 && f < 1e15 {
		return int64(f), true
	}
	return 0, false
}

// printable reports whether s is visible ASCII (and spaces, when spaces is set).
func printable(s string, spaces bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 0x21 || c > 0x7e) && !(spaces && c == ' ') {
			return false
		}
	}
	return true
}

// endpointLabel is u without query, fragment or credentials: how errors name an endpoint.
func endpointLabel(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Scheme + "://" + u.Host + u.EscapedPath()
}

// newHTTPClient returns the client of upstream calls: bounded, no redirects followed.
func newHTTPClient() *http.Client {
	return &http.Client{
		Timeout: CallTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// authStyle is how the client authenticates at the token endpoint.
type authStyle int

const (
	styleAuto authStyle = iota
	styleHeader
	styleParams
)

// exchange posts form to p's token endpoint with p's client credentials (and p's resource)
// and reads the token. With the style unknown it tries HTTP Basic, then the body on
// invalid_client, and remembers on rt what worked.
func (s *Service) exchange(ctx context.Context, rt *Route, p *upstreamAS, form url.Values) (Token, error) {
	style := p.style
	if style == styleAuto {
		style = styleHeader
		if rt.detected.Load() == int32(styleParams) {
			style = styleParams
		}
		t, err := s.post(ctx, p, form, style)
		var te *TokenError
		if err != nil && style == styleHeader && errors.As(err, &te) && (te.Code == "invalid_client" || te.Status == http.StatusUnauthorized) {
			t, err = s.post(ctx, p, form, styleParams)
			if err == nil {
				rt.detected.Store(int32(styleParams))
			}
		}
		return t, err
	}
	return s.post(ctx, p, form, style)
}

// post makes one token endpoint call.
func (s *Service) post(ctx context.Context, p *upstreamAS, form url.Values, style authStyle) (Token, error) {
	endpoint := endpointLabel(p.tokenURL)
	body := url.Values{}
	for k, v := range form {
		body[k] = v
	}
	if p.resource != "" {
		body.Set("resource", p.resource)
	}
	secret := p.clientSecret
	if secret == "" || style == styleParams {
		body.Set("client_id", p.clientID)
		if secret != "" {
			body.Set("client_secret", secret)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, s.callTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.tokenURL, strings.NewReader(body.Encode()))
	if err != nil {
		return Token{}, &TokenError{Endpoint: endpoint, Reason: "cannot build the request"}
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if secret != "" && style != styleParams {
		// RFC 6749 §2.3.1: both parts form-encoded before Basic encoding.
		cred := url.QueryEscape(p.clientID) + ":" + url.QueryEscape(secret)
		req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(cred)))
	}
	resp, err := p.http.Do(req)
	if err != nil {
		reason := "no response"
		if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
			reason = fmt.Sprintf("no complete response within %s", s.callTimeout)
		}
		return Token{}, &TokenError{Endpoint: endpoint, Reason: reason}
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return Token{}, &TokenError{Endpoint: endpoint, Status: resp.StatusCode, Reason: "redirects are not followed"}
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes+1))
	if err != nil {
		reason := "the response could not be read"
		if ctx.Err() != nil {
			reason = fmt.Sprintf("no complete response within %s", s.callTimeout)
		}
		return Token{}, &TokenError{Endpoint: endpoint, Status: resp.StatusCode, Reason: reason}
	}
	if len(raw) > MaxResponseBytes {
		return Token{}, &TokenError{Endpoint: endpoint, Status: resp.StatusCode, Reason: fmt.Sprintf("the response is larger than %d KiB", MaxResponseBytes>>10)}
	}
	return ParseTokenResponse(endpoint, resp.StatusCode, resp.Header.Get("Content-Type"), raw, s.now())
}
